// Syntax tree of a parsed chat template (see parser.h). One node type with
// a kind tag keeps the interpreter a single switch; each kind documents
// which fields it uses.
//
// Thread safety: immutable after parsing; shared by concurrent renders.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace weft::chat {

enum class NodeKind {
  // --- expressions ---
  kConst,     // value
  kName,      // name
  kGetattr,   // a.name
  kGetitem,   // a[b]
  kSlice,     // a:b:c inside [] (each may be null)
  kCall,      // a(args..., kwargs...)
  kFilter,    // a|name(args, kwargs); a null in a filter block
  kTest,      // a is name(args, kwargs)
  kNot,       // not a
  kNeg,       // -a
  kPos,       // +a
  kBinary,    // a op b; op in + - * / // % ** and or
  kCompare,   // a (ops[i] items[i])...; ops: == != < <= > >= in notin
  kConcat,    // items joined with ~
  kCondExpr,  // a if b else c (c may be null)
  kList,      // [items]
  kTuple,     // (items)
  kDict,      // {items[2i]: items[2i+1]}
  kNsRef,     // name.attr as an assignment target
  // --- statements ---
  kData,         // literal text: value (a string)
  kOutput,       // {{ a }}
  kIf,           // if a: body; else_body (elif is a nested kIf in else_body)
  kFor,          // for target(b) in a [if c]: body; else_body
  kSet,          // set target(b) = a
  kSetBlock,     // set target(b) [| filter a]: body
  kMacro,        // macro name(params = defaults): body
  kCallBlock,    // call [(params)] a: body (a is the kCall)
  kFilterBlock,  // filter a: body (a is a kFilter chain over null)
  kWith,         // with targets = values: body (params/defaults)
  kBreak,
  kContinue,
  kScope,  // body in place (HF's {% generation %})
};

struct Node;
using NodePtr = std::unique_ptr<Node>;

struct Node {
  NodeKind kind;
  int line = 0;
  std::string name;  // names, attributes, filter/test/macro names, op
  Value value;       // kConst, kData
  NodePtr a, b, c;
  std::vector<NodePtr> items;    // list/tuple/dict/concat/call args
  std::vector<std::string> ops;  // kCompare operators
  std::vector<std::pair<std::string, NodePtr>> kwargs;  // call kwargs
  // kMacro/kCallBlock/kWith: parameter names and default expressions
  // (defaults align with the last params; kWith: one per param).
  std::vector<std::string> params;
  std::vector<NodePtr> defaults;
  std::vector<NodePtr> body;
  std::vector<NodePtr> else_body;
  // kFor: whether the body mentions `loop` (else the loop object is not
  // built). Set after parsing.
  bool uses_loop = true;

  Node(NodeKind k, int l) : kind(k), line(l) {}
};

}  // namespace weft::chat
