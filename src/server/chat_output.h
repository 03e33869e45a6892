// A chat request's output side: which tool-call format and reasoning
// markers its template's model writes, the constraint that forces a call,
// and, per choice, the parser that turns generated text into content,
// reasoning and tool calls for the response (whole or as SSE deltas).
//
//   ChatFormat f = DetectChatFormat(info.chat_template_source);
//   PrepareChatMessages(f, &req);                 // before rendering
//   ApiResult<ChatOutputPlan> plan = PlanChatOutput(f, prompt_text, &req);
//   ChatOutput out(plan->parser);                 // one per choice
//
// Thread safety: the functions are pure; a ChatOutput is used by one thread
// at a time.
#pragma once

#include <string_view>
#include <vector>

#include "server/openai_request.h"
#include "server/openai_response.h"
#include "server/tool_calls.h"

namespace weft::server {

// What parsing a chat request's output needs, decided when it is prepared.
struct ChatOutputPlan {
  bool enabled = false;  // parse the output (tool calls or reasoning)
  ParserOptions parser;
  // Keep control tokens' text (other than end-of-generation) in the
  // output: tool-call markers such as [TOOL_CALLS] are control tokens.
  bool render_special = false;
};

// Before rendering: tool_choice "none" hides the tools from the template;
// the generic format describes them in a system message instead and
// writes earlier tool turns as text; Firefunction gets its variables
// (tool_request.h).
void PrepareChatMessages(const ChatFormat& f, OpenAiRequest* req);

// After rendering `prompt`: the plan, and a forced call's constraint in
// req->sampling.structured. A 400 when the tools' schemas cannot be
// enforced.
ApiResult<ChatOutputPlan> PlanChatOutput(const ChatFormat& f, std::string_view prompt,
                                         OpenAiRequest* req);

// Renders req's chat prompt for `info`'s template with the steps above;
// *plan is the output plan.
ApiResult<std::string> RenderChatPrompt(Backend& b, const ModelInfo& info, OpenAiRequest* req,
                                        ChatOutputPlan* plan);

// The 400 for a prompt of `tokens` tokens (`at_least`: a lower bound) that
// does not fit a context of `ctx`, in OpenAI's words.
ApiError PromptTooLong(int64_t ctx, int64_t tokens, bool at_least, const char* param);
// A prompt of `bytes` text bytes has at least bytes / max_token_bytes
// tokens: one that cannot fit the context is refused before the tokenizer
// spends seconds on it.
std::optional<ApiError> CheckPromptBytes(const ModelInfo& info, size_t bytes, const char* param);

// One choice's parsed output.
class ChatOutput {
 public:
  explicit ChatOutput(ParserOptions options) : parser_(std::move(options)) {}

  // The chunk pieces (text, reasoning, tool_call fields only) that `text`
  // decides.
  std::vector<ChunkPiece> Push(std::string_view text) { return Pieces(parser_.Push(text)); }
  std::vector<ChunkPiece> Finish() { return Pieces(parser_.Finish()); }
  bool has_calls() const { return !parsed_.calls.empty(); }
  // Content, reasoning and calls into a non-streamed choice.
  void Fill(ChoiceResult* c) const;

 private:
  std::vector<ChunkPiece> Pieces(const std::vector<OutputEvent>& events);

  ToolCallStreamParser parser_;
  ParsedOutput parsed_;
};

}  // namespace weft::server
