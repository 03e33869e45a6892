// The Interpreter's expression half: Eval and what it calls (statements are
// in interpreter.cc).
#include <string>
#include <utility>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/interpreter_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {

using internal::DepthGuard;
using internal::TooDeep;

Status Interpreter::EvalArgs(const Node& n, const std::shared_ptr<Scope>& scope,
                             CallArgs* args) {
  for (const NodePtr& a : n.items) {
    ASSIGN_OR_RETURN(Value v, Eval(*a, scope));
    args->args.push_back(std::move(v));
  }
  for (const auto& [k, a] : n.kwargs) {
    ASSIGN_OR_RETURN(Value v, Eval(*a, scope));
    args->kwargs.emplace_back(k, std::move(v));
  }
  return OkStatus();
}

StatusOr<Value> Interpreter::EvalFilter(const Node& n,
                                        const std::shared_ptr<Scope>& scope,
                                        const Value* input) {
  Value in;
  if (!n.a) {
    in = *input;
  } else if (n.a->kind == NodeKind::kFilter) {
    ASSIGN_OR_RETURN(in, EvalFilter(*n.a, scope, input));
  } else {
    ASSIGN_OR_RETURN(in, Eval(*n.a, scope));
  }
  CallArgs args;
  RETURN_IF_ERROR(EvalArgs(n, scope, &args));
  auto r = CallFilter(*this, n.name, in, args);
  if (!r.ok()) return AtLine(r.status(), n.line);
  return r;
}

StatusOr<Value> Interpreter::Eval(const Node& n,
                                  const std::shared_ptr<Scope>& scope) {
  DepthGuard g(&eval_depth_, config_.max_eval_depth);
  if (!g.ok) return TooDeep();
  auto r = EvalInner(n, scope);
  if (!r.ok()) return AtLine(r.status(), n.line);
  if (r->is_string())
    RETURN_IF_ERROR(AtLine(CheckSize(r->str().size()), n.line));
  if (r->nesting() > config_.max_value_depth) {
    return ResourceExhaustedError(
        StrFormat("template error at line %d: value nested deeper than %d",
                  n.line, config_.max_value_depth));
  }
  return r;
}

StatusOr<Value> Interpreter::EvalCompare(const Node& n,
                                         const std::shared_ptr<Scope>& scope) {
  ASSIGN_OR_RETURN(Value left, Eval(*n.a, scope));
  for (size_t i = 0; i < n.ops.size(); ++i) {
    ASSIGN_OR_RETURN(Value right, Eval(*n.items[i], scope));
    const std::string& op = n.ops[i];
    bool r = false;
    if (op == "==" || op == "!=") {
      r = Equals(left, right) == (op == "==");
    } else if (op == "in" || op == "notin") {
      ASSIGN_OR_RETURN(bool c, Contains(right, left));
      r = c == (op == "in");
    } else {
      if (left.is_undefined()) return UndefinedError(left);
      if (right.is_undefined()) return UndefinedError(right);
      if (op == "<") {
        ASSIGN_OR_RETURN(r, LessThan(left, right));
      } else if (op == ">") {
        ASSIGN_OR_RETURN(r, LessThan(right, left));
      } else if (op == "<=") {
        ASSIGN_OR_RETURN(bool lt, LessThan(left, right));
        r = lt || Equals(left, right);
      } else {  // >=
        ASSIGN_OR_RETURN(bool gt, LessThan(right, left));
        r = gt || Equals(left, right);
      }
    }
    if (!r) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

StatusOr<Value> Interpreter::EvalInner(const Node& n,
                                       const std::shared_ptr<Scope>& scope) {
  switch (n.kind) {
    case NodeKind::kConst:
      return n.value;
    case NodeKind::kName:
      return Lookup(n.name, scope.get());
    case NodeKind::kGetattr: {
      ASSIGN_OR_RETURN(Value obj, Eval(*n.a, scope));
      return GetAttr(obj, n.name);
    }
    case NodeKind::kGetitem:
      return EvalGetitem(n, scope);
    case NodeKind::kCall: {
      ASSIGN_OR_RETURN(Value fn, Eval(*n.a, scope));
      CallArgs args;
      RETURN_IF_ERROR(EvalArgs(n, scope, &args));
      return CallValue(fn, args);
    }
    case NodeKind::kFilter:
      return EvalFilter(n, scope, nullptr);
    case NodeKind::kTest: {
      ASSIGN_OR_RETURN(Value in, Eval(*n.a, scope));
      CallArgs args;
      RETURN_IF_ERROR(EvalArgs(n, scope, &args));
      ASSIGN_OR_RETURN(bool r, CallTest(*this, n.name, in, args));
      return Value(r);
    }
    case NodeKind::kNot: {
      ASSIGN_OR_RETURN(Value v, Eval(*n.a, scope));
      return Value(!v.Truthy());
    }
    case NodeKind::kNeg:
    case NodeKind::kPos: {
      ASSIGN_OR_RETURN(Value v, Eval(*n.a, scope));
      return Negate(v, n.kind == NodeKind::kNeg);
    }
    case NodeKind::kBinary:
      return EvalBinary(n, scope);
    case NodeKind::kCompare:
      return EvalCompare(n, scope);
    case NodeKind::kCondExpr: {
      ASSIGN_OR_RETURN(Value test, Eval(*n.b, scope));
      if (test.Truthy()) return Eval(*n.a, scope);
      if (n.c) return Eval(*n.c, scope);
      return Value::Undefined(
          "the inline if-expression evaluated to false and "
          "no else section was defined.");
    }
    case NodeKind::kConcat:
    case NodeKind::kList:
    case NodeKind::kTuple:
    case NodeKind::kDict:
      return EvalCollection(n, scope);
    default:
      return InvalidArgumentError("not an expression");
  }
}

StatusOr<Value> Interpreter::EvalGetitem(const Node& n,
                                         const std::shared_ptr<Scope>& scope) {
  ASSIGN_OR_RETURN(Value obj, Eval(*n.a, scope));
  if (n.b->kind == NodeKind::kSlice) {
    const Node& s = *n.b;
    Value parts[3];
    const Node* nodes[3] = {s.a.get(), s.b.get(), s.c.get()};
    for (int i = 0; i < 3; ++i) {
      if (nodes[i] != nullptr) {
        ASSIGN_OR_RETURN(parts[i], Eval(*nodes[i], scope));
      }
    }
    return SliceValue(obj, parts[0], parts[1], parts[2]);
  }
  ASSIGN_OR_RETURN(Value key, Eval(*n.b, scope));
  return GetItem(obj, key);
}

StatusOr<Value> Interpreter::EvalBinary(const Node& n,
                                        const std::shared_ptr<Scope>& scope) {
  ASSIGN_OR_RETURN(Value l, Eval(*n.a, scope));
  if (n.name == "and") {
    if (!l.Truthy()) return l;
    return Eval(*n.b, scope);
  }
  if (n.name == "or") {
    if (l.Truthy()) return l;
    return Eval(*n.b, scope);
  }
  ASSIGN_OR_RETURN(Value r, Eval(*n.b, scope));
  return BinaryOp(n.name, l, r, config_.max_output_bytes);
}

StatusOr<Value> Interpreter::EvalCollection(const Node& n,
                                            const std::shared_ptr<Scope>& scope) {
  if (n.kind == NodeKind::kConcat) {
    std::string s;
    for (const NodePtr& item : n.items) {
      ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
      RETURN_IF_ERROR(Append(&s, PyStr(v)));
    }
    return Value(std::move(s));
  }
  if (n.kind == NodeKind::kDict) {
    Dict d;
    for (size_t i = 0; i + 1 < n.items.size(); i += 2) {
      ASSIGN_OR_RETURN(Value k, Eval(*n.items[i], scope));
      ASSIGN_OR_RETURN(Value v, Eval(*n.items[i + 1], scope));
      if (k.is_sequence() && !k.is_tuple())
        return TypeError("unhashable type: 'list'");
      if (k.is_dict()) return TypeError("unhashable type: 'dict'");
      d.Set(std::move(k), std::move(v));
    }
    return Value::MakeDict(std::move(d));
  }
  Value::List items;
  for (const NodePtr& item : n.items) {
    ASSIGN_OR_RETURN(Value v, Eval(*item, scope));
    items.push_back(std::move(v));
  }
  return n.kind == NodeKind::kList ? Value::MakeList(std::move(items))
                                   : Value::MakeTuple(std::move(items));
}

}  // namespace weft::chat
