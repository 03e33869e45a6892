#include "server/chat_output.h"

#include <utility>

#include "server/tool_request.h"
#include "util/strings.h"

namespace weft::server {

ApiError PromptTooLong(int64_t ctx, int64_t tokens, bool at_least,
                       const char* param) {
  return BadRequest(
      StrFormat("This model's maximum context length is %lld "
                "tokens. However, your prompt has %s%lld tokens.",
                (long long)ctx, at_least ? "at least " : "", (long long)tokens),
      param, "context_length_exceeded");
}

std::optional<ApiError> CheckPromptBytes(const ModelInfo& info, size_t bytes,
                                         const char* param) {
  const int64_t ctx = info.context_length.value_or(0);
  const int64_t per_token = info.max_token_bytes.value_or(0);
  if (ctx <= 0 || per_token <= 0) return std::nullopt;
  const int64_t at_least =
      (static_cast<int64_t>(bytes) + per_token - 1) / per_token;
  if (at_least < ctx) return std::nullopt;
  return PromptTooLong(ctx, at_least, /*at_least=*/true, param);
}

void PrepareChatMessages(const ChatFormat& f, OpenAiRequest* req) {
  ChatTemplateRequest& c = req->chat_request;
  if (!req->tools.active()) c.tools_json.clear();
  c.arguments_as_text = f.tools == ToolCallFormat::kFunctionaryV31 ||
                        f.tools == ToolCallFormat::kFunctionaryV32 ||
                        f.tools == ToolCallFormat::kFirefunction ||
                        f.tools == ToolCallFormat::kDeepSeekR1;
  if (f.tools == ToolCallFormat::kFirefunction) AddFirefunctionVariables(&c);
  if (f.tools != ToolCallFormat::kGeneric) return;
  ToolTurnsAsText(&c);
  if (req->tools.active()) AddGenericToolPrompt(req->tools, f.system_role, &c);
  c.tools_json.clear();
}

ApiResult<ChatOutputPlan> PlanChatOutput(const ChatFormat& f, std::string_view prompt,
                                         OpenAiRequest* req) {
  ChatOutputPlan plan;
  ParserOptions& p = plan.parser;
  p.format = f.tools;
  p.think_open = f.think_open;
  p.think_close = f.think_close;
  if (!f.think_open.empty()) {
    const size_t end = prompt.find_last_not_of(" \t\r\n");
    prompt = prompt.substr(0, end == std::string_view::npos ? 0 : end + 1);
    p.start_in_reasoning = prompt.ends_with(f.think_open);
  }
  const bool user_constraint =
      req->sampling.json_object || req->sampling.structured.grammar != nullptr;
  // The generic format's calls are JSON only the constraint asks for.
  p.parse_tools = req->tools.active() &&
                  !(f.tools == ToolCallFormat::kGeneric && user_constraint);
  if (p.parse_tools && !user_constraint) {
    ApiResult<sampling::StructuredOutput> c = ToolConstraint(
        req->tools, f.tools, p.start_in_reasoning ? f.think_close : std::string());
    if (!c.ok()) return c.error();
    if (c.value().grammar) req->sampling.structured = std::move(c.value());
  }
  plan.enabled = p.parse_tools || !f.think_open.empty();
  plan.render_special = p.parse_tools && f.tools != ToolCallFormat::kGeneric;
  return plan;
}

ApiResult<std::string> RenderChatPrompt(Backend& b, const ModelInfo& info, OpenAiRequest* req,
                                        ChatOutputPlan* plan) {
  const ChatFormat format = DetectChatFormat(info.chat_template_source);
  PrepareChatMessages(format, req);
  StatusOr<std::string> text = b.ApplyChatTemplate(req->chat_request);
  if (!text.ok()) return FromStatus(text.status(), "messages");
  ApiResult<ChatOutputPlan> p = PlanChatOutput(format, *text, req);
  if (!p.ok()) return p.error();
  *plan = std::move(p.value());
  return std::move(*text);
}

std::vector<ChunkPiece> ChatOutput::Pieces(const std::vector<OutputEvent>& events) {
  ApplyEvents(events, &parsed_);
  std::vector<ChunkPiece> out;
  for (const OutputEvent& e : events) {
    ChunkPiece piece;
    switch (e.kind) {
      case OutputEvent::Kind::kContent:
        piece.text = e.text;
        break;
      case OutputEvent::Kind::kReasoning:
        piece.reasoning = e.text;
        break;
      case OutputEvent::Kind::kCallStart:
        piece.tool_call = ParsedToolCall{e.id, e.name, ""};
        piece.tool_call_start = true;
        break;
      case OutputEvent::Kind::kArguments:
        piece.tool_call = ParsedToolCall{"", "", e.text};
        break;
      case OutputEvent::Kind::kCallEnd:
        continue;
    }
    piece.tool_call_index = e.index;
    out.push_back(std::move(piece));
  }
  return out;
}

void ChatOutput::Fill(ChoiceResult* c) const {
  c->text = parsed_.content;
  c->reasoning = parsed_.reasoning;
  c->tool_calls = parsed_.calls;
}

}  // namespace weft::server
