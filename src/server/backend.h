// The interface between the HTTP server and whatever generates tokens (the
// engine, or a fake in tests). Plain structs only: the server parses the
// OpenAI JSON into these as early as possible, and nothing below it sees
// JSON (tool definitions and template kwargs travel as JSON strings).
//
// Thread safety: every Backend method may be called from any server I/O
// thread concurrently; implementations synchronise internally.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/pass_cost_model.h"
#include "sampling/params.h"
#include "util/status.h"

namespace weft::server {

// How tokens are chosen. Defaults mean "off" (greedy-equivalent only when
// temperature is 0).
struct SamplingFields {
  float temperature = 1.0f;         // 0 = greedy
  float top_p = 1.0f;               // nucleus mass, (0, 1]
  int32_t top_k = 0;                // <= 0: disabled
  float min_p = 0.0f;               // [0, 1], 0 = disabled
  std::optional<uint64_t> seed;     // unset: nondeterministic
  float presence_penalty = 0.0f;    // [-2, 2]
  float frequency_penalty = 0.0f;   // [-2, 2]
  float repetition_penalty = 1.0f;  // 1 = off
  std::map<int32_t, float> logit_bias;  // token id -> bias in [-100, 100]
  int32_t logprobs = -1;  // -1: none; N >= 0: chosen token + top N
  bool json_object = false;  // output one JSON object (response_format)
  // A compiled structured-output constraint (openai_constraints.h); its
  // grammar is null when the request has none. Not with json_object.
  sampling::StructuredOutput structured;
};

// One generation request: `n` sequences from the same prompt.
struct GenerateRequest {
  std::string request_id;            // unique while in flight
  std::vector<int32_t> prompt_ids;   // already tokenized
  SamplingFields sampling;           // how to pick tokens
  int32_t max_tokens = 16;           // per sequence, >= 1
  std::vector<std::string> stop;     // stop strings (not included in text)
  std::vector<int32_t> stop_token_ids;  // extra end-of-generation ids
  bool ignore_eos = false;           // keep going past EOS
  int32_t n = 1;                     // sequences to generate, >= 1
  bool echo = false;  // the server prepends prompt text itself; informational
  int32_t priority = 0;  // lower runs earlier (vLLM convention)
  // Speculative decoding: nullopt = the server's default; false = off.
  std::optional<bool> speculative;
  // Keep control tokens' text in the output, except those that end
  // generation (tool-call markers such as [TOOL_CALLS] are control tokens).
  bool render_special = false;
  // >= 0: sequence 0's events carry every prompt token's logprob with this
  // many alternatives (GenerateEvent::prompt_logprobs).
  int32_t prompt_logprobs = -1;
};

// One alternative at a position: a token and its log-probability.
struct TokenLogprob {
  int32_t id = -1;        // token id
  std::string text;       // the token's bytes (may be partial UTF-8)
  float logprob = 0.0f;   // natural log
};

// The chosen token at one position and the top alternatives.
struct PositionLogprobs {
  TokenLogprob chosen;              // the sampled token
  std::vector<TokenLogprob> top;    // best first, size <= requested N
  // false: the prompt's first token, which has no context: its logprob
  // and alternatives are null in the API.
  bool has_logprob = true;
};

enum class FinishReason { kStop, kLength, kAbort, kError };

// "stop", "length", "abort", "error".
std::string_view FinishReasonName(FinishReason r);

// Token counts for a whole request (all n sequences).
struct Usage {
  int32_t prompt_tokens = 0;         // counted once, not per sequence
  int32_t completion_tokens = 0;     // summed over sequences
  int32_t cached_prompt_tokens = 0;  // prompt tokens served from cache
  std::optional<double> queue_seconds;  // time spent waiting, if known
};

// A piece of output. Per sequence `index`, events arrive in order; the last
// one for each index has `finish` set. After every sequence finished, one
// more event with `last` = true (and `usage`) ends the request; no callback
// follows it. An event may carry text, a finish, and `last` at once.
struct GenerateEvent {
  int32_t index = 0;                  // which of the n sequences
  std::string text;                   // new text (may be empty)
  std::vector<int32_t> token_ids;     // tokens produced since last event
  std::vector<PositionLogprobs> logprobs;  // one per token_ids entry, if asked
  // GenerateRequest::prompt_logprobs: the next prompt tokens, in order
  // across events, from the first (has_logprob false); before any token.
  std::vector<PositionLogprobs> prompt_logprobs;
  std::optional<FinishReason> finish;      // set on a sequence's last event
  std::string error_message;          // when finish == kError
  // When finish == kStop because a stop string matched: that string.
  std::string stop_string;
  bool last = false;                  // the request's final event
  std::optional<Usage> usage;         // set when last
};

// Called from a backend thread. Must not block (the server only posts it to
// an I/O thread).
using EventCallback = std::function<void(GenerateEvent)>;

// A tool call inside an assistant message (for chat templates).
struct ToolCall {
  std::string id;              // "call_..."
  std::string type = "function";
  std::string name;            // function name
  std::string arguments;       // JSON text, as sent by the client
};

struct ChatMessage {
  std::string role;                    // system, user, assistant, tool, ...
  std::optional<std::string> content;  // null for tool-call-only messages
  std::optional<std::string> name;     // optional author name
  std::vector<ToolCall> tool_calls;    // assistant tool calls
  std::optional<std::string> tool_call_id;  // for role "tool"
};

struct ChatTemplateRequest {
  std::vector<ChatMessage> messages;     // the conversation
  bool add_generation_prompt = true;     // open an assistant turn
  std::string tools_json;                // JSON array text, or empty
  std::map<std::string, std::string> kwargs_json;  // name -> JSON value text
  // Tool calls' arguments reach the template as their JSON text, for
  // templates that concatenate them (Functionary, Firefunction, DeepSeek
  // R1); else as a dict when they are a JSON object (most templates).
  bool arguments_as_text = false;
};

// Static facts about the served model and engine; unknown = nullopt.
struct ModelInfo {
  std::string id = "weft";                 // the name clients use
  std::optional<std::string> path;         // GGUF path
  std::optional<uint64_t> size_bytes;      // file size
  std::optional<std::string> sha256;       // file hash, if computed
  std::optional<std::string> architecture; // "gemma3", "llama", ...
  std::optional<std::string> quantization; // "Q4_K_M", ...
  std::optional<int64_t> context_length;   // max tokens per sequence
  std::optional<int64_t> parameter_count;  // total weights
  std::optional<int64_t> vocab_size;       // token ids are < this
  // Text bytes the longest token (special tokens' text included) stands
  // for: a prompt of B bytes has at least B / this tokens.
  std::optional<int64_t> max_token_bytes;
  int64_t created = 0;                     // unix time the model was loaded
  // Where the chat template came from: "gguf", "file:PATH", "builtin:NAME".
  std::optional<std::string> chat_template;
  // The chat template's Jinja source (tool-call format and reasoning
  // markers are read from it: tool_calls.h); empty if unknown.
  std::string chat_template_source;
  // Stop strings every chat request adds (a built-in template's next-turn
  // marker, e.g. "\nUser:"); usually empty.
  std::vector<std::string> chat_stop;
};

// Static engine settings, for /v1/effective-config.
struct EngineInfo {
  std::optional<std::string> isa_path;         // "avx2", "avx512", ...
  std::optional<int64_t> threads;              // compute threads
  std::optional<std::string> scheduler_kind;   // "continuous", ...
  std::optional<int64_t> max_in_flight;        // sequences at once
  std::optional<int64_t> prefill_chunk_size;   // tokens per prefill chunk
  std::optional<int64_t> token_budget;         // tokens per step
  std::optional<int64_t> max_queue;            // waiting requests allowed
  std::optional<int64_t> kv_block_size;        // tokens per KV block
  std::optional<int64_t> kv_bytes;             // KV cache bytes
  std::optional<std::string> kv_type;          // KV row storage: "f16", ...
  std::optional<bool> prefix_caching;          // KV reuse of shared prefixes
  std::optional<std::string> scheduling_policy;  // "fcfs" or "priority"
  std::optional<double> target_itl_ms;  // pass-size latency target; unset
                                        // = off (fixed token budget)
  std::optional<double> target_itl_ratio;  // the same as a multiple of
                                           // the decodes' own time
  std::optional<std::string> spec_method;  // "off", "ngram", "draft"
  std::optional<int64_t> spec_k_max;       // draft tokens per sequence
  std::optional<bool> spec_adaptive;       // k adapts (false: always k_max)
  std::optional<std::string> draft_model;  // --spec draft: its GGUF path
  std::optional<int64_t> draft_kv_blocks;  // and its KV blocks
};



// Live counters and gauges; unknown = nullopt.
struct BackendStats {
  int64_t num_running = 0;                // sequences being generated
  int64_t num_waiting = 0;                // requests queued
  std::optional<int64_t> kv_blocks_total;
  std::optional<int64_t> kv_blocks_used;
  std::optional<int64_t> kv_blocks_cached;  // free but holding a prefix
  int64_t prefix_cache_queries = 0;       // prompt tokens looked up
  int64_t prefix_cache_hits = 0;          // of which found in cache
  int64_t peak_in_flight = 0;             // most sequences running at once
  std::optional<std::string> admission_ceiling_reason;  // what limits it
  int64_t steps = 0;                      // engine passes run
  int64_t step_tokens = 0;                // tokens processed in passes
  int64_t step_token_budget = 0;          // budget offered to passes
  int64_t preemptions = 0;
  int64_t aborts = 0;
  int64_t admission_rejections = 0;
  // Speculative decoding (engine::SchedulerStats::spec_*).
  int64_t spec_num_drafts = 0;
  int64_t spec_num_draft_tokens = 0;
  int64_t spec_num_accepted_tokens = 0;
  std::vector<int64_t> spec_accepted_per_pos;  // [k_max]
  // The engine's online model of a pass's time (engine/pass_cost_model.h);
  // unknown for fakes.
  std::optional<engine::PassCostSnapshot> pass_cost;
};

enum class Readiness { kLoading, kReady, kDraining };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual Readiness readiness() const = 0;
  virtual ModelInfo model_info() const = 0;
  virtual EngineInfo engine_info() const = 0;
  virtual BackendStats Stats() const = 0;

  virtual StatusOr<std::vector<int32_t>> Tokenize(std::string_view text,
                                                  bool add_special,
                                                  bool parse_special) = 0;
  // render_special: control tokens as their text ("<bos>"), as /detokenize
  // shows them; else they are dropped, as in generated text.
  virtual StatusOr<std::string> Detokenize(std::span<const int32_t> ids,
                                           bool render_special) = 0;
  // InvalidArgument carries the template's own message (-> HTTP 400).
  virtual StatusOr<std::string> ApplyChatTemplate(
      const ChatTemplateRequest& req) = 0;

  // Queues a request. On OK, `on_event` will be called until an event with
  // last = true. Errors: InvalidArgument (bad ids, too long),
  // ResourceExhausted (queue full), Unavailable (not ready).
  virtual Status Submit(GenerateRequest req, EventCallback on_event) = 0;
  // Stops a request soon; its remaining sequences finish with kAbort and
  // the final event still arrives. Unknown ids are ignored.
  virtual void Abort(const std::string& request_id) = 0;
};

// What tokenizing with special tokens puts before the text (BOS for most
// models, nothing for some), found by tokenizing a probe both ways.
StatusOr<std::vector<int32_t>> LeadingSpecialTokens(Backend& b);

// A rendered chat prompt's tokens, as /v1/chat/completions makes them:
// special tokens parsed, and the model's leading special tokens (BOS) put in
// front unless the template wrote them itself (as llama.cpp does).
StatusOr<std::vector<int32_t>> TokenizeChatPrompt(Backend& b,
                                                  std::string_view text);

}  // namespace weft::server
