#include "server/openai_request.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "server/openai_constraints.h"
#include "server/openai_messages.h"
#include "server/request_json.h"
#include "util/strings.h"

namespace weft::server {

namespace {

using json = nlohmann::json;

std::string Dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Reads optional fields of one JSON object; keeps the first error. A field
// that is absent or null leaves the output untouched.
class FieldReader {
 public:
  explicit FieldReader(const json& obj) : obj_(obj) {}

  const json* Get(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool ok() const { return !error_.has_value(); }
  const ApiError& error() const { return *error_; }
  void Fail(std::string message, std::string param) {
    if (!error_) error_ = BadRequest(std::move(message), std::move(param));
  }

  void Bool(const char* key, bool* out) {
    const json* v = Get(key);
    if (!v || !ok()) return;
    if (!v->is_boolean()) return Fail(StrFormat("'%s' must be a boolean", key), key);
    *out = v->get<bool>();
  }
  void String(const char* key, std::string* out) {
    const json* v = Get(key);
    if (!v || !ok()) return;
    if (!v->is_string()) return Fail(StrFormat("'%s' must be a string", key), key);
    *out = v->get<std::string>();
  }
  // [lo, hi]; lo_open makes it (lo, hi].
  void Float(const char* key, double lo, double hi, bool lo_open, float* out) {
    const json* v = Get(key);
    if (!v || !ok()) return;
    if (!v->is_number()) return Fail(StrFormat("'%s' must be a number", key), key);
    double d = v->get<double>();
    if (!std::isfinite(d) || d > hi || d < lo || (lo_open && d == lo)) {
      return Fail(StrFormat("'%s' must be in %c%g, %g], got %g", key,
                            lo_open ? '(' : '[', lo, hi, d),
                  key);
    }
    const float x = static_cast<float>(d);
    if (lo_open && x <= static_cast<float>(lo)) {  // underflows to lo
      return Fail(StrFormat("'%s' must be in (%g, %g], got %g", key, lo, hi,
                            d),
                  key);
    }
    *out = x;
  }
  // Integer in [lo, hi]; returns whether a value was read.
  bool Int(const char* key, int64_t lo, int64_t hi, int64_t* out) {
    const json* v = Get(key);
    if (!v || !ok()) return false;
    if (!IsInteger(*v)) {
      Fail(StrFormat("'%s' must be an integer", key), key);
      return false;
    }
    if (v->is_number_unsigned() &&
        v->get<uint64_t>() > static_cast<uint64_t>(hi)) {
      Fail(StrFormat("'%s' must be at most %lld", key, (long long)hi), key);
      return false;
    }
    int64_t x = v->is_number_float() ? static_cast<int64_t>(v->get<double>())
                                     : v->get<int64_t>();
    if (x < lo || x > hi) {
      Fail(StrFormat("'%s' must be in [%lld, %lld], got %lld", key,
                     (long long)lo, (long long)hi, (long long)x),
           key);
      return false;
    }
    *out = x;
    return true;
  }
  void Int32(const char* key, int64_t lo, int64_t hi, int32_t* out) {
    int64_t x;
    if (Int(key, lo, hi, &x)) *out = static_cast<int32_t>(x);
  }

  static bool IsInteger(const json& v) {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15;
  }

 private:
  const json& obj_;
  std::optional<ApiError> error_;
};

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

// Token id list; false + error on bad input.
bool ParseIds(const json& arr, const ParseLimits& limits, const char* param,
              std::vector<int32_t>* out, std::optional<ApiError>* err) {
  for (const json& t : arr) {
    if (!FieldReader::IsInteger(t)) {
      *err = BadRequest(StrFormat("'%s' token ids must be integers", param),
                        param);
      return false;
    }
    int64_t id = t.is_number_float() ? (int64_t)t.get<double>()
                 : t.is_number_unsigned() ? (int64_t)std::min<uint64_t>(
                                                t.get<uint64_t>(), kInt32Max)
                                          : t.get<int64_t>();
    int64_t vocab = limits.vocab_size.value_or(kInt32Max);
    if (id < 0 || id >= vocab) {
      *err = BadRequest(StrFormat("token id %lld is out of range [0, %lld)",
                                  (long long)id, (long long)vocab),
                        param);
      return false;
    }
    out->push_back(static_cast<int32_t>(id));
  }
  return true;
}

// response_format: "text" (the default) or "json_object" (JSON mode: the
// output is constrained to one JSON object, as vLLM and llama-server do);
// "json_schema" is parsed with the other constraints (openai_constraints.h);
// anything else gets a 400 naming the field.
void ParseResponseFormat(FieldReader& f, SamplingFields* s) {
  const json* v = f.Get("response_format");
  if (v == nullptr) return;
  const json* type =
      v->is_object() && v->contains("type") ? &(*v)["type"] : nullptr;
  if (type == nullptr || !type->is_string()) {
    return f.Fail("'response_format' must be an object with a 'type'",
                  "response_format");
  }
  if (*type == "json_object") {
    s->json_object = true;
  } else if (*type != "text" && *type != "json_schema") {
    return f.Fail("'response_format' of type '" +
                      CEscape(type->get<std::string>()) +
                      "' is not supported; 'text', 'json_object' and 'json_schema' are",
                  "response_format");
  }
}

// logit_bias: {"token id": bias in [-100, 100]}, ids within the vocabulary.
void ParseLogitBias(FieldReader& f, const ParseLimits& limits, SamplingFields* s) {
  const json* v = f.Get("logit_bias");
  if (v == nullptr) return;
  if (!v->is_object()) return f.Fail("'logit_bias' must be an object", "logit_bias");
  if (v->size() > kMaxLogitBiasEntries) {
    return f.Fail(StrFormat("'logit_bias' has %zu entries; at most %d are "
                            "allowed", v->size(), kMaxLogitBiasEntries),
                  "logit_bias");
  }
  for (const auto& [key, bias] : v->items()) {
    char* end = nullptr;
    long long id = std::strtoll(key.c_str(), &end, 10);
    int64_t vocab = limits.vocab_size.value_or(kInt32Max);
    if (key.empty() || *end != '\0' || id < 0 || id >= vocab) {
      return f.Fail("'logit_bias' keys must be token ids in range, got '" +
                        CEscape(key) + "'",
                    "logit_bias");
    }
    if (!bias.is_number() || bias.get<double>() < -100 ||
        bias.get<double>() > 100) {
      return f.Fail("'logit_bias' values must be numbers in [-100, 100]",
                    "logit_bias");
    }
    s->logit_bias[static_cast<int32_t>(id)] = bias.get<float>();
  }
}

// stop: one string or a list of at most kMaxStopStrings non-empty strings.
void ParseStop(FieldReader& f, std::vector<std::string>* stop) {
  const json* v = f.Get("stop");
  if (v == nullptr) return;
  if (v->is_string()) {
    stop->push_back(v->get<std::string>());
  } else if (v->is_array() && v->size() <= kMaxStopStrings) {
    for (const json& s2 : *v) {
      if (!s2.is_string()) return f.Fail("'stop' must be strings", "stop");
      stop->push_back(s2.get<std::string>());
    }
  } else {
    return f.Fail(StrFormat("'stop' must be a string or a list of at most "
                            "%d strings", kMaxStopStrings),
                  "stop");
  }
  for (const auto& s2 : *stop) {
    if (s2.empty()) return f.Fail("'stop' strings must not be empty", "stop");
    if (size_t chars = Utf8Chars(s2); chars > kMaxStopChars) {
      return f.Fail(StrFormat("'stop' strings must be at most %d "
                              "characters, got %zu", kMaxStopChars, chars),
                    "stop");
    }
  }
}

// Fields shared by both endpoints.
void ParseCommon(const json& j, const ParseLimits& limits, FieldReader& f,
                 OpenAiRequest* r) {
  f.String("model", &r->model);
  int32_t max_tokens = 0;
  bool has_max = false;
  for (const char* key : {"max_completion_tokens", "max_tokens"}) {
    if (has_max || !f.Get(key)) continue;
    f.Int32(key, 1, kInt32Max, &max_tokens);
    has_max = true;
  }
  if (has_max && f.ok()) r->max_tokens = max_tokens;
  SamplingFields& s = r->sampling;
  f.Float("temperature", 0, 2, false, &s.temperature);
  f.Float("top_p", 0, 1, true, &s.top_p);
  f.Int32("top_k", -1, kInt32Max, &s.top_k);
  f.Float("min_p", 0, 1, false, &s.min_p);
  f.Float("presence_penalty", -2, 2, false, &s.presence_penalty);
  f.Float("frequency_penalty", -2, 2, false, &s.frequency_penalty);
  f.Float("repetition_penalty", 0, 10, true, &s.repetition_penalty);
  int64_t seed;
  if (f.Int("seed", std::numeric_limits<int64_t>::min(),
            std::numeric_limits<int64_t>::max(), &seed)) {
    s.seed = static_cast<uint64_t>(seed);
  }
  f.Int32("n", 1, limits.max_n, &r->n);
  f.Bool("stream", &r->stream);
  f.Bool("ignore_eos", &r->ignore_eos);
  f.String("user", &r->user);
  f.Int32("priority", -1000000, 1000000, &r->priority);
  if (f.Get("speculative") != nullptr) {
    bool speculative = true;
    f.Bool("speculative", &speculative);
    r->speculative = speculative;
  }
  ParseResponseFormat(f, &r->sampling);
  if (!f.ok()) return;

  ParseLogitBias(f, limits, &r->sampling);
  if (!f.ok()) return;
  ParseStop(f, &r->stop);
  if (!f.ok()) return;
  if (const json* v = f.Get("stop_token_ids")) {
    std::optional<ApiError> err;
    if (!v->is_array()) return f.Fail("'stop_token_ids' must be a list", "stop_token_ids");
    if (!ParseIds(*v, limits, "stop_token_ids", &r->stop_token_ids, &err)) {
      return f.Fail(err->message, "stop_token_ids");
    }
  }
  if (const json* v = f.Get("stream_options")) {
    if (!v->is_object()) return f.Fail("'stream_options' must be an object", "stream_options");
    if (!r->stream) {
      return f.Fail("'stream_options' is only allowed when 'stream' is true",
                    "stream_options");
    }
    FieldReader so(*v);
    so.Bool("include_usage", &r->include_usage);
    if (!so.ok()) return f.Fail(so.error().message, "stream_options");
  }
}

// prompts x n against limits.max_sequences; the error names `n`.
std::optional<ApiError> CheckSequences(size_t prompts, int32_t n,
                                       const ParseLimits& limits) {
  size_t seqs = prompts * static_cast<size_t>(n);
  if (seqs <= static_cast<size_t>(std::max(1, limits.max_sequences))) {
    return std::nullopt;
  }
  return BadRequest(StrFormat("%zu prompt(s) x n = %d is %zu sequences; at "
                              "most %d are allowed per request",
                              prompts, n, seqs, limits.max_sequences),
                    "n");
}

// RejectUnsupported*: fields of the OpenAI API whose non-default values
// Weft cannot honour get a 400 naming them, not a 200 that ignores them.
void RejectUnsupportedCompletion(FieldReader& f) {
  if (const json* v = f.Get("suffix")) {
    if (!v->is_string()) return f.Fail("'suffix' must be a string", "suffix");
    if (!v->get<std::string>().empty()) {
      return f.Fail("'suffix' is not supported", "suffix");
    }
  }
  if (const json* v = f.Get("best_of")) {
    if (!FieldReader::IsInteger(*v) || v->get<double>() != 1) {
      return f.Fail("'best_of' is not supported (only 1); use 'n'", "best_of");
    }
  }
}

void ParseChatExtras(FieldReader& f, ChatTemplateRequest* c) {
  f.Bool("add_generation_prompt", &c->add_generation_prompt);
  if (const json* t = f.Get("tools")) {
    if (!t->is_array()) return f.Fail("'tools' must be a list", "tools");
    c->tools_json = Dump(*t);
  }
  if (const json* k = f.Get("chat_template_kwargs")) {
    if (!k->is_object()) {
      return f.Fail("'chat_template_kwargs' must be an object",
                    "chat_template_kwargs");
    }
    for (const auto& [key, v] : k->items()) c->kwargs_json[key] = Dump(v);
  }
}

// Both generation routes: the body's JSON, the fields they share and the
// structured-output constraint, then route(j, f, r) for the rest.
template <typename Route>
ApiResult<OpenAiRequest> ParseGeneration(std::string_view body, const ParseLimits& limits,
                                         bool chat, Route&& route) {
  std::optional<ApiError> err;
  std::optional<json> j = ParseBody(body, &err);
  if (!j) return *err;
  OpenAiRequest r;
  r.chat = chat;
  FieldReader f(*j);
  ParseCommon(*j, limits, f, &r);
  auto so = f.ok() ? ParseStructuredOutput(body, *j, &r.sampling) : std::nullopt;
  if (so) f.Fail(so->message, *so->param);
  return route(*j, f, std::move(r));
}

ApiResult<OpenAiRequest> CompletionFields(const ParseLimits& limits, FieldReader& f,
                                          OpenAiRequest r) {
  std::optional<ApiError> err;
  f.Bool("echo", &r.echo);
  f.Int32("logprobs", 0, 20, &r.sampling.logprobs);
  if (f.ok() && r.echo && r.sampling.logprobs >= 0 && r.stream) {
    // The prompt tokens' logprobs come with the whole response only.
    f.Fail("'echo' with 'logprobs' is not supported when streaming", "echo");
  }
  RejectUnsupportedCompletion(f);
  if (!f.ok()) return f.error();

  const json* p = f.Get("prompt");
  if (!p) return BadRequest("'prompt' is required", "prompt");
  if (p->is_string()) {
    r.prompts.push_back({p->get<std::string>(), {}});
  } else if (p->is_array() && !p->empty()) {
    const json& first = (*p)[0];
    if (first.is_string()) {
      for (const json& s : *p) {
        if (!s.is_string()) return BadRequest("'prompt' list mixes types", "prompt");
        r.prompts.push_back({s.get<std::string>(), {}});
      }
    } else if (first.is_number()) {
      PromptInput in;
      if (!ParseIds(*p, limits, "prompt", &in.ids, &err)) return *err;
      r.prompts.push_back(std::move(in));
    } else if (first.is_array()) {
      for (const json& ids : *p) {
        PromptInput in;
        if (!ids.is_array() || ids.empty()) {
          return BadRequest("'prompt' token lists must be non-empty lists",
                            "prompt");
        }
        if (!ParseIds(ids, limits, "prompt", &in.ids, &err)) return *err;
        r.prompts.push_back(std::move(in));
      }
    } else {
      return BadRequest("'prompt' must be a string, a list of strings, a list "
                        "of token ids, or a list of token id lists",
                        "prompt");
    }
  } else {
    return BadRequest("'prompt' must be a non-empty string list or token list",
                      "prompt");
  }
  if (r.prompts.size() > kMaxPrompts) {
    return BadRequest(StrFormat("too many prompts (max %d)", kMaxPrompts),
                      "prompt");
  }
  if (std::optional<ApiError> e = CheckSequences(r.prompts.size(), r.n, limits)) {
    return *e;
  }
  return r;
}

ApiResult<OpenAiRequest> ChatFields(std::string_view body, const json& j,
                                    const ParseLimits& limits, FieldReader& f,
                                    OpenAiRequest r) {
  f.Bool("logprobs", &r.chat_logprobs);
  int32_t top = 0;
  f.Int32("top_logprobs", 0, 20, &top);
  if (f.ok() && f.Get("top_logprobs") && !r.chat_logprobs) {
    f.Fail("'top_logprobs' requires 'logprobs': true", "top_logprobs");
  }
  r.sampling.logprobs = r.chat_logprobs ? top : -1;
  ParseChatExtras(f, &r.chat_request);
  if (!f.ok()) return f.error();
  if (auto e = ParseToolRequest(body, j, &r.tools, &r.chat_request)) return *e;
  if (r.tools.forced() && (r.sampling.json_object || r.sampling.structured.grammar)) {
    return BadRequest("'tool_choice' 'required' or a named function cannot be combined with a "
                      "structured-output constraint",
                      "tool_choice");
  }
  const json* m = f.Get("messages");
  if (!m) return BadRequest("'messages' is required", "messages");
  std::string why;
  if (!ParseMessages(*m, &r.chat_request, &why)) return BadRequest(why, "messages");
  if (std::optional<ApiError> e = CheckSequences(1, r.n, limits)) return *e;
  return r;
}

}  // namespace

ApiResult<OpenAiRequest> ParseCompletionRequest(std::string_view body,
                                                const ParseLimits& limits) {
  return ParseGeneration(body, limits, false,
                         [&](const json&, FieldReader& f, OpenAiRequest r) {
                           return CompletionFields(limits, f, std::move(r));
                         });
}

ApiResult<OpenAiRequest> ParseChatRequest(std::string_view body,
                                          const ParseLimits& limits) {
  return ParseGeneration(body, limits, true,
                         [&](const json& j, FieldReader& f, OpenAiRequest r) {
                           return ChatFields(body, j, limits, f, std::move(r));
                         });
}

ApiResult<TokenizeRequest> ParseTokenizeRequest(std::string_view body) {
  std::optional<ApiError> err;
  std::optional<json> j = ParseBody(body, &err);
  if (!j) return *err;
  TokenizeRequest r;
  // Text or messages, never both (even a null one), so a request never has
  // a part that is silently ignored.
  if (j->contains("messages") && (j->contains("prompt") || j->contains("content"))) {
    return BadRequest("give either 'prompt' (or 'content') or 'messages', not both",
                      "messages");
  }
  FieldReader f(*j);
  f.Bool("add_special", &r.add_special);
  f.Bool("add_special_tokens", &r.add_special);
  std::string text;
  for (const char* key : {"prompt", "content"}) {
    if (!f.Get(key)) continue;
    f.String(key, &text);
    r.text = text;
    break;
  }
  if (!f.ok()) return f.error();
  if (!r.text) {
    const json* m = f.Get("messages");
    if (!m) return BadRequest("'prompt' (or 'messages') is required", "prompt");
    ChatTemplateRequest c;
    ParseChatExtras(f, &c);
    if (!f.ok()) return f.error();
    std::string why;
    if (!ParseMessages(*m, &c, &why)) return BadRequest(why, "messages");
    r.chat = std::move(c);
  }
  return r;
}

ApiResult<std::vector<int32_t>> ParseDetokenizeRequest(
    std::string_view body, const ParseLimits& limits) {
  std::optional<ApiError> err;
  std::optional<json> j = ParseBody(body, &err);
  if (!j) return *err;
  auto it = j->find("tokens");
  if (it == j->end() || !it->is_array()) {
    return BadRequest("'tokens' must be a list of token ids", "tokens");
  }
  std::vector<int32_t> ids;
  if (!ParseIds(*it, limits, "tokens", &ids, &err)) return *err;
  return ids;
}

}  // namespace weft::server
