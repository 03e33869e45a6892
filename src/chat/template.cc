#include "chat/template.h"

#include "chat/builtins.h"
#include "chat/parser.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

// Unknown filters/tests fail at parse time, as in jinja2's compiler.
Status CheckNames(const Node& n) {
  if (n.kind == NodeKind::kFilter && !HasFilter(n.name)) {
    return InvalidArgumentError(
        StrFormat("template syntax error at line %d: No filter named '%s'.",
                  n.line, n.name.c_str()));
  }
  if (n.kind == NodeKind::kTest && !HasTest(n.name)) {
    return InvalidArgumentError(
        StrFormat("template syntax error at line %d: No test named '%s'.",
                  n.line, n.name.c_str()));
  }
  for (const Node* child : {n.a.get(), n.b.get(), n.c.get()}) {
    if (child != nullptr) RETURN_IF_ERROR(CheckNames(*child));
  }
  for (const auto* list : {&n.items, &n.defaults, &n.body, &n.else_body}) {
    for (const NodePtr& child : *list) RETURN_IF_ERROR(CheckNames(*child));
  }
  for (const auto& [k, child] : n.kwargs) RETURN_IF_ERROR(CheckNames(*child));
  return OkStatus();
}

// Whether the subtree mentions the name `loop`; records it on for-nodes.
bool MarkLoopUse(Node& n) {
  bool uses = n.kind == NodeKind::kName && n.name == "loop";
  for (Node* child : {n.a.get(), n.b.get(), n.c.get()}) {
    if (child != nullptr) uses |= MarkLoopUse(*child);
  }
  bool body_uses = false;
  for (auto* list : {&n.items, &n.defaults, &n.body, &n.else_body}) {
    for (NodePtr& child : *list) body_uses |= MarkLoopUse(*child);
  }
  for (auto& [k, child] : n.kwargs) uses |= MarkLoopUse(*child);
  if (n.kind == NodeKind::kFor) n.uses_loop = body_uses;
  return uses || body_uses;
}

}  // namespace

StatusOr<Template> Template::Parse(std::string_view source) {
  ASSIGN_OR_RETURN(std::vector<NodePtr> body, ParseTemplate(source));
  for (const NodePtr& n : body) RETURN_IF_ERROR(CheckNames(*n));
  for (NodePtr& n : body) MarkLoopUse(*n);
  return Template(
      std::make_shared<const std::vector<NodePtr>>(std::move(body)));
}

StatusOr<std::string> Template::Render(const Value& context,
                                       const RenderConfig& config) const {
  Interpreter interp(config);
  return interp.Render(*body_, context);
}

bool IsRaisedException(const Status& s) {
  return s.code() == kRaisedExceptionCode;
}

StatusOr<std::string> RenderChat(const Template& tmpl, const Value& messages,
                                 std::string_view bos_token,
                                 std::string_view eos_token,
                                 bool add_generation_prompt, const Value& tools,
                                 const Value& extra_kwargs,
                                 const RenderConfig& config) {
  Dict ctx;
  ctx.Set(Value("messages"), messages);
  ctx.Set(Value("tools"), tools.is_undefined() ? Value::None() : tools);
  ctx.Set(Value("documents"), Value::None());
  ctx.Set(Value("add_generation_prompt"), Value(add_generation_prompt));
  ctx.Set(Value("bos_token"), Value(bos_token));
  ctx.Set(Value("eos_token"), Value(eos_token));
  if (extra_kwargs.is_dict()) {
    for (const auto& [k, v] : extra_kwargs.dict().entries()) ctx.Set(k, v);
  }
  return tmpl.Render(Value::MakeDict(std::move(ctx)), config);
}

}  // namespace weft::chat
