// Internal to src/chat: the recursive-descent parser behind ParseTemplate
// (parser.h). Statements are in parser.cc, expressions in parser_expr.cc.
//
// Thread safety: one Parser per parse, on one thread.
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "util/enum_name.h"
#include "util/status.h"
#include "util/strings.h"

namespace weft::chat::internal {

// Parses one token stream. Invariant: `depth_` counts the current
// recursion plus chain links and never passes `max_nesting_` (so every tree
// it returns is at most that deep).
class Parser {
 public:
  Parser(std::vector<Token> tokens, int max_nesting)
      : toks_(std::move(tokens)), max_nesting_(max_nesting) {}

  StatusOr<std::vector<NodePtr>> Run() {
    std::vector<NodePtr> body;
    RETURN_IF_ERROR(Subparse({}, &body));
    if (cur().type != TokenType::kEof) {
      return Fail("unexpected '" + Describe(cur()) + "'");
    }
    return body;
  }

 private:
  // --- token helpers ---
  const Token& cur() const { return toks_[pos_]; }
  const Token& look() const {
    return toks_[pos_ + 1 < toks_.size() ? pos_ + 1 : pos_];
  }
  void Next() {
    if (pos_ + 1 < toks_.size()) ++pos_;
  }
  // Whether the current token is `text` of `type`; Skip also consumes it.
  bool Is(TokenType type, const char* text) const {
    return cur().type == type && cur().text == text;
  }
  bool Skip(TokenType type, const char* text) {
    if (!Is(type, text)) return false;
    Next();
    return true;
  }
  bool IsName(const char* n) const { return Is(TokenType::kName, n); }
  bool IsOp(const char* op) const { return Is(TokenType::kOperator, op); }
  bool SkipName(const char* n) { return Skip(TokenType::kName, n); }
  bool SkipOp(const char* op) { return Skip(TokenType::kOperator, op); }
  // What an error calls a token: structural tokens by name, the others
  // (null here) by their text.
  static std::string Describe(const Token& t) {
    static constexpr const char* kNames[] = {
        "template data",          "begin of print statement",
        "end of print statement", "begin of statement block",
        "end of statement block", nullptr,  // kName
        nullptr,                  nullptr,  // kString, kInteger
        nullptr,                  nullptr,  // kFloat, kOperator
        "end of template"};
    const char* name = EnumName<TokenType::kEof>(t.type, kNames, nullptr);
    return name != nullptr ? name : t.text;
  }
  Status Fail(const std::string& msg) const {
    return InvalidArgumentError(StrFormat(
        "template syntax error at line %d: %s", cur().line, msg.c_str()));
  }
  Status ExpectOp(const char* op) {
    if (SkipOp(op)) return OkStatus();
    return Fail(
        StrFormat("expected '%s', got '%s'", op, Describe(cur()).c_str()));
  }
  Status ExpectBlockEnd() {
    if (cur().type == TokenType::kBlockEnd) {
      Next();
      return OkStatus();
    }
    return Fail("expected end of statement block, got '" + Describe(cur()) +
                "'");
  }
  StatusOr<std::string> ExpectName() {
    if (cur().type != TokenType::kName) {
      return Fail("expected name, got '" + Describe(cur()) + "'");
    }
    std::string n = cur().text;
    Next();
    return n;
  }
  NodePtr Make(NodeKind k) { return std::make_unique<Node>(k, cur().line); }

  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
  };
  // Counts each link of a left-deep chain (a + b + c, a.b.c, elif ...) as
  // one nesting level, so the tree depth stays bounded.
  struct ChainGuard {
    Parser* p;
    int n = 0;
    explicit ChainGuard(Parser* parser) : p(parser) {}
    ~ChainGuard() { p->depth_ -= n; }
    Status Step() {
      ++n;
      ++p->depth_;
      return p->CheckDepth();
    }
  };
  Status CheckDepth() {
    if (depth_ > max_nesting_) return Fail("template nesting too deep");
    return OkStatus();
  }

  // --- statements ---
  // Parses until a block whose first name is in `end` (left current) or
  // eof.
  Status Subparse(const std::set<std::string>& end, std::vector<NodePtr>* body);

  // Body up to one of `end`; leaves the end name current.
  Status Statements(const std::set<std::string>& end,
                    std::vector<NodePtr>* body, bool drop_needle);
  // Statements() of a macro or call block body: break and continue there
  // belong to no enclosing loop.
  Status StatementsOutsideLoops(const std::set<std::string>& end,
                                std::vector<NodePtr>* body);

  Status ParseStatement(std::vector<NodePtr>* body);

  StatusOr<NodePtr> ParseIf();

  StatusOr<NodePtr> ParseFor();

  StatusOr<NodePtr> ParseSet();

  Status ParseSignature(Node* n);

  StatusOr<NodePtr> ParseMacro();

  StatusOr<NodePtr> ParseCallBlock();

  StatusOr<NodePtr> ParseWith();

  // A name, a namespace ref (with_namespace) or a tuple of names.
  StatusOr<NodePtr> ParseAssignTarget(const std::set<std::string>& extra_end,
                                      bool with_namespace);

  // --- expressions ---
  bool IsTupleEnd(const std::set<std::string>& extra_end) const;

  StatusOr<NodePtr> ParseTuple(bool simplified, bool with_condexpr,
                               const std::set<std::string>& extra_end,
                               bool explicit_parens,
                               bool with_namespace = false);

  StatusOr<NodePtr> ParseExpression(bool with_condexpr);

  NodePtr Binary(const std::string& op, NodePtr l, NodePtr r, int line);

  StatusOr<NodePtr> ParseOr();

  StatusOr<NodePtr> ParseAnd();

  // `operand (op operand)*`, left-associative, for the operators in `ops`:
  // names ("or", "and") when `names`, else operator tokens ("+", "*", ...).
  // Defined in parser_expr.cc, its only user.
  template <typename Operand>
  StatusOr<NodePtr> ParseBinaryChain(std::initializer_list<const char*> ops, bool names,
                                     Operand operand);

  StatusOr<NodePtr> ParseNot();

  StatusOr<NodePtr> ParseCompare();

  StatusOr<NodePtr> ParseMath1();

  StatusOr<NodePtr> ParseConcat();

  StatusOr<NodePtr> ParseMath2();

  StatusOr<NodePtr> ParsePow();

  StatusOr<NodePtr> ParseUnary(bool with_filter);

  StatusOr<NodePtr> ParsePrimary(bool with_namespace);

  StatusOr<NodePtr> ParsePostfix(NodePtr node);

  StatusOr<NodePtr> ParseFilterExpr(NodePtr node);

  StatusOr<NodePtr> ParseSubscript(NodePtr node);

  StatusOr<NodePtr> ParseSubscribed();

  Status ParseCallArgs(Node* n);

  StatusOr<NodePtr> ParseCall(NodePtr node);

  StatusOr<std::string> DottedName();

  StatusOr<NodePtr> ParseFilter(NodePtr node, bool start_inline);

  StatusOr<NodePtr> ParseTest(NodePtr node);

  std::vector<Token> toks_;
  size_t pos_ = 0;
  int depth_ = 0;
  int max_nesting_;
  int loop_depth_ = 0;
};

}  // namespace weft::chat::internal
