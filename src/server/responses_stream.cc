// OpenAI Responses output: the response object and its event stream.
#include <nlohmann/json.hpp>

#include "server/agent_apis.h"
#include "server/translate_json.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

json UsageJson(const Usage& u) {
  return {{"input_tokens", u.prompt_tokens},
          {"input_tokens_details", {{"cached_tokens", u.cached_prompt_tokens}}},
          {"output_tokens", u.completion_tokens},
          {"output_tokens_details", {{"reasoning_tokens", 0}}},
          {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

// The response object. `status`: in_progress, completed, incomplete,
// failed; `usage` null while in progress.
json ResponseObject(const ResponseMeta& meta, const std::string& status,
                    json output, const json& usage) {
  json j = {{"id", meta.id},
            {"object", "response"},
            {"created_at", meta.created},
            {"status", status},
            {"model", meta.model},
            {"output", std::move(output)},
            {"error", nullptr},
            {"incomplete_details", nullptr},
            {"instructions", nullptr},
            {"parallel_tool_calls", true},
            {"tool_choice", "auto"},
            {"tools", json::array()},
            {"text", {{"format", {{"type", "text"}}}}},
            {"store", false},
            {"metadata", json::object()},
            {"usage", usage}};
  if (status == "incomplete")
    j["incomplete_details"] = {{"reason", "max_output_tokens"}};
  if (status == "failed") {
    j["error"] = {
        {"code", "server_error"},
        {"message", "the request was aborted (timed out or cancelled)"}};
  }
  return j;
}

std::string ResponseStatus(std::optional<FinishReason> f) {
  if (f == FinishReason::kLength) return "incomplete";
  if (f == FinishReason::kAbort || f == FinishReason::kError) return "failed";
  return "completed";
}

json MessageItem(const std::string& id, const std::string& text,
                 const char* status) {
  json content = json::array();
  if (status == std::string("completed")) {
    content.push_back({{"type", "output_text"},
                       {"text", text},
                       {"annotations", json::array()},
                       {"logprobs", json::array()}});
  }
  return {{"id", id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", content}};
}

json CallItem(const std::string& id, const ParsedToolCall& t,
              const char* status) {
  return {{"id", id},         {"type", "function_call"},
          {"status", status}, {"call_id", t.id},
          {"name", t.name},   {"arguments", t.arguments}};
}

json ReasoningItem(const std::string& id, const std::string& text) {
  json content = json::array();
  if (!text.empty())
    content.push_back({{"type", "reasoning_text"}, {"text", text}});
  return {{"id", id},
          {"type", "reasoning"},
          {"summary", json::array()},
          {"content", content}};
}

// Thread safety: one call's strand (ApiFormat).
// Invariant: at most one output item is open (`open_` != kNone); the
// items done so far are in `output_`, in order.
class ResponsesFormat : public ApiFormat {
 public:
  const char* IdPrefix() const override { return "resp"; }

  std::string StreamStart(const ResponseMeta& meta, int64_t) override {
    meta_ = meta;
    json r = ResponseObject(meta_, "in_progress", json::array(), nullptr);
    std::string out = Event("response.created", {{"response", r}});
    return out + Event("response.in_progress", {{"response", r}});
  }

  std::string StreamPiece(const ChunkPiece& p) override {
    std::string out;
    if (!p.reasoning.empty()) {
      if (open_ != kReasoning) {
        out += Close();
        out += OpenItem(kReasoning, ReasoningItem(NewItemId("rs"), ""));
      }
      text_ += p.reasoning;
      out += Event("response.reasoning_text.delta", {{"item_id", item_id_},
                                                     {"output_index", index()},
                                                     {"content_index", 0},
                                                     {"delta", p.reasoning}});
    }
    if (!p.text.empty()) {
      if (open_ != kMessage) {
        out += Close();
        out += OpenItem(kMessage,
                        MessageItem(NewItemId("msg"), "", "in_progress"));
        out += Event("response.content_part.added", {{"item_id", item_id_},
                                                     {"output_index", index()},
                                                     {"content_index", 0},
                                                     {"part", TextPart("")}});
      }
      text_ += p.text;
      out += Event("response.output_text.delta", {{"item_id", item_id_},
                                                  {"output_index", index()},
                                                  {"content_index", 0},
                                                  {"delta", p.text},
                                                  {"logprobs", json::array()}});
    }
    if (p.tool_call) {
      if (p.tool_call_start) {
        out += Close();
        call_ = *p.tool_call;
        call_.arguments.clear();
        out += OpenItem(kCall, CallItem(NewItemId("fc"), call_, "in_progress"));
      }
      if (!p.tool_call->arguments.empty()) {
        call_.arguments += p.tool_call->arguments;
        out += Event("response.function_call_arguments.delta",
                     {{"item_id", item_id_},
                      {"output_index", index()},
                      {"delta", p.tool_call->arguments}});
      }
    }
    if (p.finish) {
      out += Close();
      finish_ = *p.finish;
    }
    return out;
  }

  std::string StreamEnd(const Usage& usage) override {
    const std::string status = ResponseStatus(finish_);
    const char* name = status == "completed"    ? "response.completed"
                       : status == "incomplete" ? "response.incomplete"
                                                : "response.failed";
    return Event(name, {{"response", ResponseObject(meta_, status, output_,
                                                    UsageJson(usage))}});
  }

  std::string StreamError(const ApiError& e) override {
    return Event("error", {{"code", e.code ? json(*e.code) : json(nullptr)},
                           {"message", e.message},
                           {"param", nullptr}});
  }

  ApiResult<std::string> Body(const ResponseMeta& meta, const ChoiceResult& c,
                              const Usage& usage) override {
    meta_ = meta;
    json output = json::array();
    if (!c.reasoning.empty())
      output.push_back(ReasoningItem(NewItemId("rs"), c.reasoning));
    if (!c.text.empty() || c.tool_calls.empty()) {
      output.push_back(MessageItem(NewItemId("msg"), c.text, "completed"));
    }
    for (const ParsedToolCall& t : c.tool_calls) {
      output.push_back(CallItem(NewItemId("fc"), t, "completed"));
    }
    return DumpJson(ResponseObject(meta, ResponseStatus(c.finish), std::move(output),
                                   UsageJson(usage)));
  }

 private:
  enum Kind { kNone, kMessage, kCall, kReasoning };

  static json TextPart(const std::string& text) {
    return {{"type", "output_text"},
            {"text", text},
            {"annotations", json::array()},
            {"logprobs", json::array()}};
  }
  int index() const { return static_cast<int>(output_.size()); }
  std::string NewItemId(const char* prefix) {
    return std::string(prefix) + "_" + meta_.id.substr(meta_.id.find('-') + 1) +
           "_" + std::to_string(items_++);
  }
  // Every event carries its type and the stream's sequence_number.
  std::string Event(const char* type, json j) {
    j["type"] = type;
    j["sequence_number"] = seq_++;
    return SseEvent(type, DumpJson(j));
  }
  std::string OpenItem(Kind kind, const json& item) {
    open_ = kind;
    item_id_ = item["id"];
    text_.clear();
    return Event("response.output_item.added",
                 {{"output_index", index()}, {"item", item}});
  }
  // Ends the open item: its .done events, and it joins output_.
  std::string Close() {
    std::string out;
    json item;
    if (open_ == kMessage) {
      out += Event("response.output_text.done", {{"item_id", item_id_},
                                                 {"output_index", index()},
                                                 {"content_index", 0},
                                                 {"text", text_},
                                                 {"logprobs", json::array()}});
      out += Event("response.content_part.done", {{"item_id", item_id_},
                                                  {"output_index", index()},
                                                  {"content_index", 0},
                                                  {"part", TextPart(text_)}});
      item = MessageItem(item_id_, text_, "completed");
    } else if (open_ == kCall) {
      out += Event("response.function_call_arguments.done",
                   {{"item_id", item_id_},
                    {"output_index", index()},
                    {"name", call_.name},
                    {"arguments", call_.arguments}});
      item = CallItem(item_id_, call_, "completed");
    } else if (open_ == kReasoning) {
      out += Event("response.reasoning_text.done", {{"item_id", item_id_},
                                                    {"output_index", index()},
                                                    {"content_index", 0},
                                                    {"text", text_}});
      item = ReasoningItem(item_id_, text_);
    } else {
      return "";
    }
    out += Event("response.output_item.done",
                 {{"output_index", index()}, {"item", item}});
    output_.push_back(std::move(item));
    open_ = kNone;
    return out;
  }

  ResponseMeta meta_;
  json output_ = json::array();  // items done
  Kind open_ = kNone;
  std::string item_id_;  // the open item's id
  std::string text_;     // the open message's or reasoning's text
  ParsedToolCall call_;  // the open call (arguments so far)
  int64_t seq_ = 0;      // next sequence_number
  int items_ = 0;        // item ids handed out
  std::optional<FinishReason> finish_;
};

}  // namespace

std::unique_ptr<ApiFormat> MakeResponsesFormat() {
  return std::make_unique<ResponsesFormat>();
}

}  // namespace weft::server
