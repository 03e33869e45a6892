// Expression grammar of the template parser (jinja2/parser.py's
// parse_expression and below).
#include "chat/parser_internal.h"

namespace weft::chat::internal {

bool Parser::IsTupleEnd(const std::set<std::string>& extra_end) const {
  const Token& t = cur();
  if (t.type == TokenType::kVarEnd || t.type == TokenType::kBlockEnd ||
      (t.type == TokenType::kOperator && t.text == ")")) {
    return true;
  }
  return t.type == TokenType::kName && extra_end.count(t.text) > 0;
}

StatusOr<NodePtr> Parser::ParseTuple(bool simplified, bool with_condexpr,
                                     const std::set<std::string>& extra_end,
                                     bool explicit_parens,
                                     bool with_namespace) {
  int line = cur().line;
  std::vector<NodePtr> args;
  bool is_tuple = false;
  while (true) {
    if (!args.empty()) RETURN_IF_ERROR(ExpectOp(","));
    if (IsTupleEnd(extra_end)) break;
    NodePtr e;
    if (simplified) {
      ASSIGN_OR_RETURN(e, ParsePrimary(with_namespace));
    } else {
      ASSIGN_OR_RETURN(e, ParseExpression(with_condexpr));
    }
    args.push_back(std::move(e));
    if (IsOp(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!args.empty()) return std::move(args[0]);
    if (!explicit_parens) {
      return Fail("Expected an expression, got '" + Describe(cur()) + "'");
    }
  }
  auto n = std::make_unique<Node>(NodeKind::kTuple, line);
  n->items = std::move(args);
  return n;
}

StatusOr<NodePtr> Parser::ParseExpression(bool with_condexpr) {
  DepthGuard g(this);
  RETURN_IF_ERROR(CheckDepth());
  if (!with_condexpr) return ParseOr();
  ASSIGN_OR_RETURN(NodePtr expr1, ParseOr());
  ChainGuard chain(this);
  while (SkipName("if")) {
    RETURN_IF_ERROR(chain.Step());
    auto n = Make(NodeKind::kCondExpr);
    ASSIGN_OR_RETURN(n->b, ParseOr());
    if (SkipName("else")) {
      ASSIGN_OR_RETURN(n->c, ParseExpression(true));
    }
    n->a = std::move(expr1);
    expr1 = std::move(n);
  }
  return expr1;
}

NodePtr Parser::Binary(const std::string& op, NodePtr l, NodePtr r, int line) {
  auto n = std::make_unique<Node>(NodeKind::kBinary, line);
  n->name = op;
  n->a = std::move(l);
  n->b = std::move(r);
  return n;
}

template <typename Operand>
StatusOr<NodePtr> Parser::ParseBinaryChain(std::initializer_list<const char*> ops, bool names,
                                           Operand operand) {
  auto match = [&]() -> const char* {
    for (const char* op : ops) {
      if (names ? IsName(op) : IsOp(op)) return op;
    }
    return nullptr;
  };
  ChainGuard chain(this);
  ASSIGN_OR_RETURN(NodePtr left, operand());
  while (const char* op = match()) {
    RETURN_IF_ERROR(chain.Step());
    int line = cur().line;
    Next();
    ASSIGN_OR_RETURN(NodePtr right, operand());
    left = Binary(op, std::move(left), std::move(right), line);
  }
  return left;
}

StatusOr<NodePtr> Parser::ParseOr() {
  return ParseBinaryChain({"or"}, true, [this] { return ParseAnd(); });
}

StatusOr<NodePtr> Parser::ParseAnd() {
  return ParseBinaryChain({"and"}, true, [this] { return ParseNot(); });
}

StatusOr<NodePtr> Parser::ParseNot() {
  if (IsName("not")) {
    auto n = Make(NodeKind::kNot);
    Next();
    DepthGuard g(this);
    RETURN_IF_ERROR(CheckDepth());
    ASSIGN_OR_RETURN(n->a, ParseNot());
    return n;
  }
  return ParseCompare();
}

StatusOr<NodePtr> Parser::ParseCompare() {
  ChainGuard chain(this);
  int line = cur().line;
  ASSIGN_OR_RETURN(NodePtr expr, ParseMath1());
  NodePtr cmp;
  while (true) {
    RETURN_IF_ERROR(chain.Step());
    std::string op;
    if (cur().type == TokenType::kOperator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
         cur().text == "<=" || cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      Next();
    } else if (IsName("in")) {
      op = "in";
      Next();
    } else if (IsName("not") && look().type == TokenType::kName &&
               look().text == "in") {
      op = "notin";
      Next();
      Next();
    } else {
      break;
    }
    if (!cmp) {
      cmp = std::make_unique<Node>(NodeKind::kCompare, line);
      cmp->a = std::move(expr);
    }
    ASSIGN_OR_RETURN(NodePtr rhs, ParseMath1());
    cmp->ops.push_back(op);
    cmp->items.push_back(std::move(rhs));
  }
  if (cmp) return cmp;
  return expr;
}

StatusOr<NodePtr> Parser::ParseMath1() {
  return ParseBinaryChain({"+", "-"}, false, [this] { return ParseConcat(); });
}

StatusOr<NodePtr> Parser::ParseConcat() {
  int line = cur().line;
  ASSIGN_OR_RETURN(NodePtr first, ParseMath2());
  if (!IsOp("~")) return first;
  auto n = std::make_unique<Node>(NodeKind::kConcat, line);
  n->items.push_back(std::move(first));
  while (SkipOp("~")) {
    ASSIGN_OR_RETURN(NodePtr next, ParseMath2());
    n->items.push_back(std::move(next));
  }
  return n;
}

StatusOr<NodePtr> Parser::ParseMath2() {
  return ParseBinaryChain({"*", "/", "//", "%"}, false, [this] { return ParsePow(); });
}

StatusOr<NodePtr> Parser::ParsePow() {
  return ParseBinaryChain({"**"}, false, [this] { return ParseUnary(true); });
}

StatusOr<NodePtr> Parser::ParseUnary(bool with_filter) {
  DepthGuard g(this);
  RETURN_IF_ERROR(CheckDepth());
  NodePtr node;
  if (IsOp("-") || IsOp("+")) {
    node = Make(IsOp("-") ? NodeKind::kNeg : NodeKind::kPos);
    Next();
    ASSIGN_OR_RETURN(node->a, ParseUnary(false));
  } else {
    ASSIGN_OR_RETURN(node, ParsePrimary(false));
  }
  ASSIGN_OR_RETURN(node, ParsePostfix(std::move(node)));
  if (with_filter) {
    ASSIGN_OR_RETURN(node, ParseFilterExpr(std::move(node)));
  }
  return node;
}

StatusOr<NodePtr> Parser::ParsePrimary(bool with_namespace) {
  const Token& t = cur();
  NodePtr n;
  if (t.type == TokenType::kName) {
    const std::string& v = t.text;
    if (v == "true" || v == "True" || v == "false" || v == "False") {
      n = Make(NodeKind::kConst);
      n->value = Value(v == "true" || v == "True");
      Next();
    } else if (v == "none" || v == "None") {
      n = Make(NodeKind::kConst);
      n->value = Value::None();
      Next();
    } else if (with_namespace && look().type == TokenType::kOperator &&
               look().text == ".") {
      n = Make(NodeKind::kNsRef);
      n->name = v;
      Next();
      Next();
      ASSIGN_OR_RETURN(std::string attr, ExpectName());
      n->value = Value(attr);
    } else {
      n = Make(NodeKind::kName);
      n->name = v;
      Next();
    }
  } else if (t.type == TokenType::kString) {
    n = Make(NodeKind::kConst);
    std::string s;
    while (cur().type == TokenType::kString) {
      s += cur().text;
      Next();
    }
    n->value = Value(std::move(s));
  } else if (t.type == TokenType::kInteger || t.type == TokenType::kFloat) {
    n = Make(NodeKind::kConst);
    n->value = t.type == TokenType::kInteger ? Value(t.int_value)
                                             : Value(t.float_value);
    Next();
  } else if (IsOp("(")) {
    Next();
    ASSIGN_OR_RETURN(n, ParseTuple(false, true, {}, true));
    RETURN_IF_ERROR(ExpectOp(")"));
  } else if (IsOp("[")) {
    n = Make(NodeKind::kList);
    Next();
    while (!IsOp("]")) {
      if (!n->items.empty()) RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("]")) break;
      ASSIGN_OR_RETURN(NodePtr e, ParseExpression(true));
      n->items.push_back(std::move(e));
    }
    RETURN_IF_ERROR(ExpectOp("]"));
  } else if (IsOp("{")) {
    n = Make(NodeKind::kDict);
    Next();
    while (!IsOp("}")) {
      if (!n->items.empty()) RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp("}")) break;
      ASSIGN_OR_RETURN(NodePtr k, ParseExpression(true));
      RETURN_IF_ERROR(ExpectOp(":"));
      ASSIGN_OR_RETURN(NodePtr v, ParseExpression(true));
      n->items.push_back(std::move(k));
      n->items.push_back(std::move(v));
    }
    RETURN_IF_ERROR(ExpectOp("}"));
  } else {
    return Fail("unexpected '" + Describe(t) + "'");
  }
  return n;
}

StatusOr<NodePtr> Parser::ParsePostfix(NodePtr node) {
  ChainGuard chain(this);
  while (true) {
    RETURN_IF_ERROR(chain.Step());
    if (IsOp(".") || IsOp("[")) {
      ASSIGN_OR_RETURN(node, ParseSubscript(std::move(node)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<NodePtr> Parser::ParseFilterExpr(NodePtr node) {
  ChainGuard chain(this);
  while (true) {
    RETURN_IF_ERROR(chain.Step());
    if (IsOp("|")) {
      ASSIGN_OR_RETURN(node, ParseFilter(std::move(node), false));
    } else if (IsName("is")) {
      ASSIGN_OR_RETURN(node, ParseTest(std::move(node)));
    } else if (IsOp("(")) {
      ASSIGN_OR_RETURN(node, ParseCall(std::move(node)));
    } else {
      return node;
    }
  }
}

StatusOr<NodePtr> Parser::ParseSubscript(NodePtr node) {
  if (SkipOp(".")) {
    const Token& t = cur();
    if (t.type == TokenType::kName) {
      auto n = Make(NodeKind::kGetattr);
      n->a = std::move(node);
      n->name = t.text;
      Next();
      return n;
    }
    if (t.type != TokenType::kInteger) return Fail("expected name or number");
    auto n = Make(NodeKind::kGetitem);
    n->a = std::move(node);
    n->b = Make(NodeKind::kConst);
    n->b->value = Value(t.int_value);
    Next();
    return n;
  }
  auto n = Make(NodeKind::kGetitem);
  Next();  // [
  std::vector<NodePtr> args;
  while (!IsOp("]")) {
    if (!args.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(NodePtr a, ParseSubscribed());
    args.push_back(std::move(a));
  }
  RETURN_IF_ERROR(ExpectOp("]"));
  if (args.empty()) return Fail("expected subscript expression");
  n->a = std::move(node);
  if (args.size() == 1) {
    n->b = std::move(args[0]);
  } else {
    for (const NodePtr& a : args) {
      if (a->kind == NodeKind::kSlice) {
        return Fail("a slice must be the only subscript");
      }
    }
    n->b = Make(NodeKind::kTuple);
    n->b->items = std::move(args);
  }
  return n;
}

StatusOr<NodePtr> Parser::ParseSubscribed() {
  NodePtr start;
  if (!IsOp(":")) {
    ASSIGN_OR_RETURN(start, ParseExpression(true));
    if (!IsOp(":")) return start;
  }
  auto n = Make(NodeKind::kSlice);
  Next();  // :
  n->a = std::move(start);
  if (!IsOp(":") && !IsOp("]") && !IsOp(",")) {
    ASSIGN_OR_RETURN(n->b, ParseExpression(true));
  }
  if (SkipOp(":")) {
    if (!IsOp("]") && !IsOp(",")) {
      ASSIGN_OR_RETURN(n->c, ParseExpression(true));
    }
  }
  return n;
}

Status Parser::ParseCallArgs(Node* n) {
  RETURN_IF_ERROR(ExpectOp("("));
  bool require_comma = false;
  while (!IsOp(")")) {
    if (require_comma) {
      RETURN_IF_ERROR(ExpectOp(","));
      if (IsOp(")")) break;
    }
    if (IsOp("*") || IsOp("**")) {
      return Fail("*args and **kwargs in calls are not supported");
    }
    if (cur().type == TokenType::kName && look().type == TokenType::kOperator &&
        look().text == "=") {
      std::string key = cur().text;
      Next();
      Next();
      ASSIGN_OR_RETURN(NodePtr v, ParseExpression(true));
      n->kwargs.emplace_back(std::move(key), std::move(v));
    } else {
      if (!n->kwargs.empty()) {
        return Fail("invalid syntax for function call expression");
      }
      ASSIGN_OR_RETURN(NodePtr v, ParseExpression(true));
      n->items.push_back(std::move(v));
    }
    require_comma = true;
  }
  return ExpectOp(")");
}

StatusOr<NodePtr> Parser::ParseCall(NodePtr node) {
  auto n = Make(NodeKind::kCall);
  n->a = std::move(node);
  RETURN_IF_ERROR(ParseCallArgs(n.get()));
  return n;
}

StatusOr<std::string> Parser::DottedName() {
  ASSIGN_OR_RETURN(std::string name, ExpectName());
  while (SkipOp(".")) {
    ASSIGN_OR_RETURN(std::string part, ExpectName());
    name += "." + part;
  }
  return name;
}

StatusOr<NodePtr> Parser::ParseFilter(NodePtr node, bool start_inline) {
  ChainGuard chain(this);
  while (IsOp("|") || start_inline) {
    RETURN_IF_ERROR(chain.Step());
    if (!start_inline) Next();
    start_inline = false;
    auto n = Make(NodeKind::kFilter);
    ASSIGN_OR_RETURN(n->name, DottedName());
    if (IsOp("(")) RETURN_IF_ERROR(ParseCallArgs(n.get()));
    n->a = std::move(node);
    node = std::move(n);
  }
  return node;
}

StatusOr<NodePtr> Parser::ParseTest(NodePtr node) {
  int line = cur().line;
  Next();  // is
  bool negated = SkipName("not");
  auto n = std::make_unique<Node>(NodeKind::kTest, line);
  ASSIGN_OR_RETURN(n->name, DottedName());
  n->a = std::move(node);
  const Token& t = cur();
  if (IsOp("(")) {
    RETURN_IF_ERROR(ParseCallArgs(n.get()));
  } else if ((t.type == TokenType::kName || t.type == TokenType::kString ||
              t.type == TokenType::kInteger || t.type == TokenType::kFloat ||
              IsOp("[") || IsOp("{")) &&
             !IsName("else") && !IsName("or") && !IsName("and")) {
    if (IsName("is")) return Fail("You cannot chain multiple tests with is");
    ASSIGN_OR_RETURN(NodePtr arg, ParsePrimary(false));
    ASSIGN_OR_RETURN(arg, ParsePostfix(std::move(arg)));
    n->items.push_back(std::move(arg));
  }
  if (!negated) return n;
  auto nn = std::make_unique<Node>(NodeKind::kNot, line);
  nn->a = std::move(n);
  return nn;
}

}  // namespace weft::chat::internal
