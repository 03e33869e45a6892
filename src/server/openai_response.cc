#include "server/openai_response.h"

#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Token text as a JSON-safe string (invalid UTF-8 bytes replaced).
std::string SafeText(const std::string& s) {
  json j = s;
  std::string quoted = Dump(j);
  return json::parse(quoted).get<std::string>();
}

json Bytes(const std::string& s) {
  json arr = json::array();
  for (unsigned char c : s) arr.push_back(static_cast<int>(c));
  return arr;
}

json UsageJson(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details",
           {{"cached_tokens", u.cached_prompt_tokens}}}};
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs}]}.
json ChatLogprobs(const std::vector<PositionLogprobs>& lps) {
  json content = json::array();
  for (const PositionLogprobs& p : lps) {
    json top = json::array();
    for (const TokenLogprob& t : p.top) {
      top.push_back({{"token", SafeText(t.text)},
                     {"logprob", t.logprob},
                     {"bytes", Bytes(t.text)}});
    }
    content.push_back({{"token", SafeText(p.chosen.text)},
                       {"logprob", p.chosen.logprob},
                       {"bytes", Bytes(p.chosen.text)},
                       {"top_logprobs", top}});
  }
  return {{"content", content}};
}

// Completions: {tokens, token_logprobs, top_logprobs, text_offset}.
json CompletionLogprobs(const std::vector<PositionLogprobs>& lps,
                        size_t offset) {
  json tokens = json::array(), token_lps = json::array(),
       tops = json::array(), offsets = json::array();
  for (const PositionLogprobs& p : lps) {
    tokens.push_back(SafeText(p.chosen.text));
    offsets.push_back(offset);
    offset += Utf8Chars(p.chosen.text);
    if (!p.has_logprob) {  // the prompt's first token
      token_lps.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    token_lps.push_back(p.chosen.logprob);
    json top = json::object();
    for (const TokenLogprob& t : p.top) top[SafeText(t.text)] = t.logprob;
    // The sampled token is always there ("up to logprobs + 1" entries).
    top[SafeText(p.chosen.text)] = p.chosen.logprob;
    tops.push_back(top);
  }
  return {{"tokens", tokens},
          {"token_logprobs", token_lps},
          {"top_logprobs", tops},
          {"text_offset", offsets}};
}

json Envelope(const ResponseMeta& meta, const char* object) {
  json j = {{"id", meta.id},
            {"object", object},
            {"created", meta.created},
            {"model", meta.model}};
  if (!meta.system_fingerprint.empty()) {
    j["system_fingerprint"] = meta.system_fingerprint;
  }
  return j;
}

json Finish(const std::optional<FinishReason>& f) {
  return f ? json(FinishReasonString(*f)) : json(nullptr);
}

// One entry of a chunk's delta.tool_calls (OpenAI's shape).
json ToolCallDelta(const ChunkPiece& p) {
  const ParsedToolCall& t = *p.tool_call;
  if (!p.tool_call_start) {
    return {{"index", p.tool_call_index}, {"function", {{"arguments", t.arguments}}}};
  }
  return {{"index", p.tool_call_index},
          {"id", t.id},
          {"type", "function"},
          {"function", {{"name", t.name}, {"arguments", ""}}}};
}

}  // namespace

std::string FinishReasonString(FinishReason r) {
  return std::string(FinishReasonName(r));
}

std::string SseData(const std::string& json_text) {
  return "data: " + json_text + "\n\n";
}

namespace {

// A non-streamed response: the envelope, each choice's index and
// finish_reason with the endpoint's own fields (fields(choice): the text or
// message, and logprobs), and the usage.
template <typename ChoiceFields>
std::string ResponseJson(const ResponseMeta& meta, const char* object,
                         const std::vector<ChoiceResult>& choices, const Usage& usage,
                         ChoiceFields fields) {
  json j = Envelope(meta, object);
  json arr = json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    json choice = {{"index", i}, {"finish_reason", Finish(choices[i].finish)}};
    choice.update(fields(choices[i]));
    arr.push_back(std::move(choice));
  }
  j["choices"] = arr;
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

}  // namespace

std::string CompletionResponseJson(const ResponseMeta& meta,
                                   const std::vector<ChoiceResult>& choices,
                                   bool want_logprobs, const Usage& usage) {
  return ResponseJson(meta, "text_completion", choices, usage, [&](const ChoiceResult& c) {
    return json{{"text", c.text},
                {"logprobs", want_logprobs
                                 ? CompletionLogprobs(c.logprobs, c.logprob_text_start)
                                 : json(nullptr)}};
  });
}

std::string ChatResponseJson(const ResponseMeta& meta,
                             const std::vector<ChoiceResult>& choices,
                             bool want_logprobs, const Usage& usage) {
  return ResponseJson(meta, "chat.completion", choices, usage, [&](const ChoiceResult& c) {
    json message = {{"role", "assistant"}, {"content", c.text}};
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
    json out = {{"logprobs", want_logprobs ? ChatLogprobs(c.logprobs) : json(nullptr)}};
    if (!c.tool_calls.empty()) {
      json calls = json::array();
      for (const ParsedToolCall& t : c.tool_calls) {
        calls.push_back({{"id", t.id},
                         {"type", "function"},
                         {"function", {{"name", t.name}, {"arguments", t.arguments}}}});
      }
      message["tool_calls"] = std::move(calls);
      if (c.text.empty()) message["content"] = nullptr;
      if (c.finish == FinishReason::kStop) out["finish_reason"] = "tool_calls";
    }
    out["message"] = std::move(message);
    return out;
  });
}

std::string ChunkJson(const ResponseMeta& meta, const ChunkPiece& p) {
  json j = Envelope(meta, meta.chat ? "chat.completion.chunk"
                                    : "text_completion");
  json choice = {{"index", p.index}};
  if (meta.chat) {
    json delta = json::object();
    if (p.role) delta["role"] = "assistant";
    if (!p.text.empty() || p.role) delta["content"] = p.text;
    if (!p.reasoning.empty()) delta["reasoning_content"] = p.reasoning;
    if (p.tool_call) delta["tool_calls"] = json::array({ToolCallDelta(p)});
    choice["delta"] = delta;
    choice["logprobs"] = p.want_logprobs && !p.logprobs.empty()
                             ? ChatLogprobs(p.logprobs)
                             : json(nullptr);
  } else {
    choice["text"] = p.text;
    choice["logprobs"] = p.want_logprobs && !p.logprobs.empty()
                             ? CompletionLogprobs(p.logprobs, p.text_offset)
                             : json(nullptr);
  }
  choice["finish_reason"] = p.tool_calls_finish && p.finish == FinishReason::kStop
                               ? json("tool_calls")
                               : Finish(p.finish);
  j["choices"] = json::array({choice});
  if (p.usage_null) j["usage"] = nullptr;
  return Dump(j);
}

std::string UsageChunkJson(const ResponseMeta& meta, const Usage& usage) {
  json j = Envelope(meta, meta.chat ? "chat.completion.chunk"
                                    : "text_completion");
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return Dump(j);
}

}  // namespace weft::server
