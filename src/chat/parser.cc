#include "chat/parser.h"

#include "chat/lexer.h"
#include "chat/parser_internal.h"
#include "util/strings.h"

namespace weft::chat {
namespace internal {

Status Parser::Subparse(const std::set<std::string>& end,
                        std::vector<NodePtr>* body) {
  DepthGuard g(this);
  RETURN_IF_ERROR(CheckDepth());
  while (cur().type != TokenType::kEof) {
    const Token& t = cur();
    if (t.type == TokenType::kData) {
      auto n = Make(NodeKind::kData);
      n->value = Value(t.text);
      body->push_back(std::move(n));
      Next();
    } else if (t.type == TokenType::kVarBegin) {
      Next();
      auto n = Make(NodeKind::kOutput);
      ASSIGN_OR_RETURN(n->a, ParseTuple(false, true, {}, false));
      if (cur().type != TokenType::kVarEnd) {
        return Fail("expected end of print statement, got '" + Describe(cur()) +
                    "'");
      }
      Next();
      body->push_back(std::move(n));
    } else if (t.type == TokenType::kBlockBegin) {
      Next();
      if (cur().type == TokenType::kName && end.count(cur().text)) {
        return OkStatus();
      }
      RETURN_IF_ERROR(ParseStatement(body));
      RETURN_IF_ERROR(ExpectBlockEnd());
    } else {
      return Fail("unexpected '" + Describe(t) + "'");
    }
  }
  if (!end.empty()) {
    std::string names;
    for (const auto& e : end) names += (names.empty() ? "" : " or ") + e;
    return Fail("unexpected end of template; expected " + names);
  }
  return OkStatus();
}

Status Parser::Statements(const std::set<std::string>& end,
                          std::vector<NodePtr>* body, bool drop_needle) {
  SkipOp(":");
  RETURN_IF_ERROR(ExpectBlockEnd());
  RETURN_IF_ERROR(Subparse(end, body));
  if (drop_needle) Next();
  return OkStatus();
}

Status Parser::ParseStatement(std::vector<NodePtr>* body) {
  if (cur().type != TokenType::kName) return Fail("tag name expected");
  std::string tag = cur().text;
  NodePtr n;
  if (tag == "if") {
    ASSIGN_OR_RETURN(n, ParseIf());
  } else if (tag == "for") {
    ASSIGN_OR_RETURN(n, ParseFor());
  } else if (tag == "set") {
    ASSIGN_OR_RETURN(n, ParseSet());
  } else if (tag == "macro") {
    ASSIGN_OR_RETURN(n, ParseMacro());
  } else if (tag == "call") {
    ASSIGN_OR_RETURN(n, ParseCallBlock());
  } else if (tag == "filter") {
    n = Make(NodeKind::kFilterBlock);
    Next();
    ASSIGN_OR_RETURN(n->a, ParseFilter(nullptr, true));
    RETURN_IF_ERROR(Statements({"endfilter"}, &n->body, true));
  } else if (tag == "with") {
    ASSIGN_OR_RETURN(n, ParseWith());
  } else if (tag == "generation") {
    n = Make(NodeKind::kScope);
    Next();
    RETURN_IF_ERROR(Statements({"endgeneration"}, &n->body, true));
  } else if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) return Fail("'" + tag + "' outside of a loop");
    n = Make(tag == "break" ? NodeKind::kBreak : NodeKind::kContinue);
    Next();
  } else if (tag == "print") {
    n = Make(NodeKind::kOutput);
    Next();
    ASSIGN_OR_RETURN(n->a, ParseTuple(false, true, {}, false));
  } else {
    return Fail("Encountered unknown tag '" + tag + "'.");
  }
  body->push_back(std::move(n));
  return OkStatus();
}

StatusOr<NodePtr> Parser::ParseIf() {
  ChainGuard chain(this);
  auto result = Make(NodeKind::kIf);
  Next();
  Node* node = result.get();
  while (true) {
    RETURN_IF_ERROR(chain.Step());
    ASSIGN_OR_RETURN(node->a, ParseTuple(false, false, {}, false));
    RETURN_IF_ERROR(Statements({"elif", "else", "endif"}, &node->body, false));
    std::string t = cur().text;
    Next();
    if (t == "elif") {
      auto elif = Make(NodeKind::kIf);
      Node* next = elif.get();
      node->else_body.push_back(std::move(elif));
      node = next;
      continue;
    }
    if (t == "else") {
      RETURN_IF_ERROR(Statements({"endif"}, &node->else_body, true));
    }
    break;
  }
  return result;
}

StatusOr<NodePtr> Parser::ParseFor() {
  auto n = Make(NodeKind::kFor);
  Next();
  ASSIGN_OR_RETURN(n->b, ParseAssignTarget({"in"}, false));
  if (!SkipName("in")) return Fail("expected 'in'");
  ASSIGN_OR_RETURN(n->a, ParseTuple(false, false, {"recursive"}, false));
  if (SkipName("if")) {
    ASSIGN_OR_RETURN(n->c, ParseExpression(true));
  }
  if (IsName("recursive")) return Fail("recursive loops are not supported");
  ++loop_depth_;
  Status s = Statements({"endfor", "else"}, &n->body, false);
  --loop_depth_;
  RETURN_IF_ERROR(s);
  std::string t = cur().text;
  Next();
  if (t == "else") {
    RETURN_IF_ERROR(Statements({"endfor"}, &n->else_body, true));
  }
  return n;
}

StatusOr<NodePtr> Parser::ParseSet() {
  int line = cur().line;
  Next();
  ASSIGN_OR_RETURN(NodePtr target, ParseAssignTarget({}, true));
  if (SkipOp("=")) {
    auto n = std::make_unique<Node>(NodeKind::kSet, line);
    n->b = std::move(target);
    ASSIGN_OR_RETURN(n->a, ParseTuple(false, true, {}, false));
    return n;
  }
  auto n = std::make_unique<Node>(NodeKind::kSetBlock, line);
  n->b = std::move(target);
  if (IsOp("|")) {
    ASSIGN_OR_RETURN(n->a, ParseFilter(nullptr, false));
  }
  RETURN_IF_ERROR(Statements({"endset"}, &n->body, true));
  return n;
}

Status Parser::ParseSignature(Node* n) {
  RETURN_IF_ERROR(ExpectOp("("));
  while (!IsOp(")")) {
    if (!n->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(std::string name, ExpectName());
    if (SkipOp("=")) {
      ASSIGN_OR_RETURN(NodePtr d, ParseExpression(true));
      n->defaults.push_back(std::move(d));
    } else if (!n->defaults.empty()) {
      return Fail("non-default argument follows default argument");
    }
    n->params.push_back(std::move(name));
  }
  return ExpectOp(")");
}

Status Parser::StatementsOutsideLoops(const std::set<std::string>& end,
                                     std::vector<NodePtr>* body) {
  int saved = loop_depth_;
  loop_depth_ = 0;
  Status s = Statements(end, body, true);
  loop_depth_ = saved;
  return s;
}

StatusOr<NodePtr> Parser::ParseMacro() {
  auto n = Make(NodeKind::kMacro);
  Next();
  ASSIGN_OR_RETURN(n->name, ExpectName());
  RETURN_IF_ERROR(ParseSignature(n.get()));
  RETURN_IF_ERROR(StatementsOutsideLoops({"endmacro"}, &n->body));
  return n;
}

StatusOr<NodePtr> Parser::ParseCallBlock() {
  auto n = Make(NodeKind::kCallBlock);
  Next();
  if (IsOp("(")) RETURN_IF_ERROR(ParseSignature(n.get()));
  ASSIGN_OR_RETURN(n->a, ParseExpression(true));
  if (n->a->kind != NodeKind::kCall) return Fail("expected call");
  RETURN_IF_ERROR(StatementsOutsideLoops({"endcall"}, &n->body));
  return n;
}

StatusOr<NodePtr> Parser::ParseWith() {
  auto n = Make(NodeKind::kWith);
  Next();
  while (cur().type != TokenType::kBlockEnd) {
    if (!n->params.empty()) RETURN_IF_ERROR(ExpectOp(","));
    ASSIGN_OR_RETURN(std::string name, ExpectName());
    RETURN_IF_ERROR(ExpectOp("="));
    ASSIGN_OR_RETURN(NodePtr v, ParseExpression(true));
    n->params.push_back(std::move(name));
    n->defaults.push_back(std::move(v));
  }
  RETURN_IF_ERROR(Statements({"endwith"}, &n->body, true));
  return n;
}

StatusOr<NodePtr> Parser::ParseAssignTarget(
    const std::set<std::string>& extra_end, bool with_namespace) {
  ASSIGN_OR_RETURN(NodePtr t,
                   ParseTuple(true, true, extra_end, false, with_namespace));
  auto ok = [](const Node& x) {
    return x.kind == NodeKind::kName || x.kind == NodeKind::kNsRef;
  };
  if (t->kind == NodeKind::kTuple) {
    for (const auto& item : t->items) {
      if (item->kind != NodeKind::kName) return Fail("can't assign to tuple");
    }
  } else if (!ok(*t)) {
    return Fail("can't assign to this expression");
  }
  return t;
}

}  // namespace internal

StatusOr<std::vector<NodePtr>> ParseTemplate(std::string_view source,
                                             int max_nesting) {
  ASSIGN_OR_RETURN(std::vector<Token> tokens, Tokenize(source));
  return internal::Parser(std::move(tokens), max_nesting).Run();
}

}  // namespace weft::chat
