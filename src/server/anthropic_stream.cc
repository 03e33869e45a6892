// Anthropic Messages output: the message body and the named SSE events.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/agent_apis.h"
#include "server/translate_json.h"

namespace weft::server {

std::string SseEvent(const std::string& name, const std::string& json) {
  return "event: " + name + "\ndata: " + json + "\n\n";
}

namespace {

using json = nlohmann::json;

// A tool call's arguments as the tool_use block's `input` object ({} when
// they are not a JSON object).
json ToolInput(const std::string& arguments) {
  json j = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : json::object();
}

// Anthropic's usage: input_tokens excludes the tokens read from the cache.
json UsageJson(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens - u.cached_prompt_tokens},
          {"output_tokens", u.completion_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", u.cached_prompt_tokens}};
}

// Thread safety: one call's strand (ApiFormat).
// Invariant: at most one content block is open (`open_` >= 0); indices
// count up from 0 in the order blocks start.
class AnthropicFormat : public ApiFormat {
 public:
  explicit AnthropicFormat(std::vector<std::string> stops)
      : stops_(std::move(stops)) {}

  const char* IdPrefix() const override { return "msg"; }

  std::string StreamStart(const ResponseMeta& meta,
                          int64_t prompt_tokens) override {
    json message = {
        {"id", meta.id},
        {"type", "message"},
        {"role", "assistant"},
        {"content", json::array()},
        {"model", meta.model},
        {"stop_reason", nullptr},
        {"stop_sequence", nullptr},
        {"usage", {{"input_tokens", prompt_tokens}, {"output_tokens", 0}}}};
    return Event("message_start",
                 {{"type", "message_start"}, {"message", message}}) +
           Event("ping", {{"type", "ping"}});
  }

  std::string StreamPiece(const ChunkPiece& p) override {
    std::string out;
    if (!p.reasoning.empty()) {
      out += Open(kThinking,
                  {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      out += Delta({{"type", "thinking_delta"}, {"thinking", p.reasoning}});
    }
    if (!p.text.empty()) {
      out += Open(kText, {{"type", "text"}, {"text", ""}});
      out += Delta({{"type", "text_delta"}, {"text", p.text}});
    }
    if (p.tool_call) {
      if (p.tool_call_start) {
        out += Close();
        out += Open(kTool, {{"type", "tool_use"},
                            {"id", p.tool_call->id},
                            {"name", p.tool_call->name},
                            {"input", json::object()}});
      }
      if (!p.tool_call->arguments.empty()) {
        out += Delta({{"type", "input_json_delta"},
                      {"partial_json", p.tool_call->arguments}});
      }
    }
    if (p.finish) {
      out += Close();
      finish_ = *p.finish;
      stop_reason_ = StopReason(*p.finish, p.tool_calls_finish, p.stop_string);
      if (stop_reason_ == "stop_sequence") stop_sequence_ = p.stop_string;
    }
    return out;
  }

  std::string StreamEnd(const Usage& usage) override {
    if (finish_ == FinishReason::kAbort) {
      return StreamError(
          GatewayTimeout("the request was aborted (timed out or cancelled)"));
    }
    json delta = {{"stop_reason", stop_reason_}, {"stop_sequence", nullptr}};
    if (stop_sequence_) delta["stop_sequence"] = *stop_sequence_;
    json u = UsageJson(usage);
    return Event("message_delta",
                 {{"type", "message_delta"}, {"delta", delta}, {"usage", u}}) +
           Event("message_stop", {{"type", "message_stop"}});
  }

  std::string StreamError(const ApiError& e) override {
    return SseEvent("error", e.ToAnthropicJson());
  }

  ApiResult<std::string> Body(const ResponseMeta& meta, const ChoiceResult& c,
                              const Usage& usage) override {
    if (c.finish == FinishReason::kAbort) {
      return GatewayTimeout("the request was aborted (timed out or cancelled)");
    }
    json content = json::array();
    if (!c.reasoning.empty()) {
      content.push_back(
          {{"type", "thinking"}, {"thinking", c.reasoning}, {"signature", ""}});
    }
    if (!c.text.empty())
      content.push_back({{"type", "text"}, {"text", c.text}});
    for (const ParsedToolCall& t : c.tool_calls) {
      content.push_back({{"type", "tool_use"},
                         {"id", t.id},
                         {"name", t.name},
                         {"input", ToolInput(t.arguments)}});
    }
    const std::string reason =
        StopReason(c.finish.value_or(FinishReason::kStop),
                   !c.tool_calls.empty(), c.stop_string);
    json j = {{"id", meta.id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", meta.model},
              {"content", content},
              {"stop_reason", reason},
              {"stop_sequence", nullptr},
              {"usage", UsageJson(usage)}};
    if (reason == "stop_sequence") j["stop_sequence"] = c.stop_string;
    return DumpJson(j);
  }

 private:
  enum Kind { kNone, kText, kThinking, kTool };

  static std::string Event(const char* name, const json& j) {
    return SseEvent(name, DumpJson(j));
  }

  // end_turn, max_tokens, stop_sequence (one of the client's own stop
  // strings matched; the template's end-of-turn strings read end_turn) or
  // tool_use.
  std::string StopReason(FinishReason f, bool tool_calls,
                         const std::string& stop) const {
    if (f == FinishReason::kLength) return "max_tokens";
    if (tool_calls) return "tool_use";
    if (!stop.empty() &&
        std::find(stops_.begin(), stops_.end(), stop) != stops_.end()) {
      return "stop_sequence";
    }
    return "end_turn";
  }

  // Starts a block of `kind` unless one is open.
  std::string Open(Kind kind, const json& block) {
    if (open_kind_ == kind && kind != kTool) return "";
    std::string out = Close();
    open_kind_ = kind;
    open_ = next_++;
    return out + Event("content_block_start", {{"type", "content_block_start"},
                                               {"index", open_},
                                               {"content_block", block}});
  }
  std::string Delta(const json& delta) {
    return Event(
        "content_block_delta",
        {{"type", "content_block_delta"}, {"index", open_}, {"delta", delta}});
  }
  std::string Close() {
    if (open_ < 0) return "";
    std::string out = Event("content_block_stop",
                            {{"type", "content_block_stop"}, {"index", open_}});
    open_ = -1;
    open_kind_ = kNone;
    return out;
  }

  std::vector<std::string> stops_;  // the client's stop_sequences
  int open_ = -1;                   // index of the open block, or -1
  Kind open_kind_ = kNone;
  int next_ = 0;  // index of the next block
  std::optional<FinishReason> finish_;
  std::string stop_reason_ = "end_turn";
  std::optional<std::string> stop_sequence_;
};

}  // namespace

std::unique_ptr<ApiFormat> MakeAnthropicFormat(
    std::vector<std::string> stop_sequences) {
  return std::make_unique<AnthropicFormat>(std::move(stop_sequences));
}

}  // namespace weft::server
