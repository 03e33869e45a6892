// What one streamed request measured: turns the SSE events of an OpenAI
// completions / chat-completions stream, with the times their bytes
// arrived, into TTFT, inter-token latencies, E2E and token counts.
//
// Token counting (vLLM's convention): a content chunk carries k tokens,
// where k comes from its logprobs (one entry per token) or from a growing
// per-chunk usage.completion_tokens; otherwise k = 1. A chunk of k tokens
// that arrives g seconds after the previous one adds k ITL samples of g/k.
// The first content chunk's extra tokens (k-1) add no ITL sample.
//
// Thread safety: none; one accumulator per request.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loadgen/sse.h"

namespace weft::loadgen {

// Why a request failed; kNone = completed.
enum class FailureKind {
  kNone,
  kHttpStatus,     // a non-200 response
  kConnection,     // connect/read/write error, or closed mid-stream
  kTimeout,        // no byte for --timeout seconds
  kInvalidStream,  // unparsable chunk, no [DONE], no content
  kStreamError,    // the server sent an error event inside the stream
};
const char* FailureKindName(FailureKind k);

// One parsed chunk.
struct ChunkInfo {
  int64_t tokens = 0;                      // content tokens (0: no content)
  std::optional<int64_t> completion_tokens;  // usage, when present
  std::optional<int64_t> prompt_tokens;      // usage, when present
  std::optional<std::string> finish_reason;  // when present
  std::optional<std::string> error;          // error object's message
};
// Parses one event's data. Returns false when it is not a JSON object.
bool ParseChunk(std::string_view data, ChunkInfo* out);

// Everything measured about one request. Times are seconds; `*_at` are
// relative to the run's start, the others are durations.
struct RequestResult {
  int64_t index = 0;             // order of issue within its level
  std::string group;             // workload role ("", "background", "long")
  int64_t prompt_tokens_planned = 0;  // what the workload asked for
  int64_t max_tokens = 0;        // requested
  double scheduled_at = -1;      // open loop: planned arrival; else -1
  double sent_at = 0;            // request issued
  FailureKind failure = FailureKind::kNone;
  int http_status = 0;           // 0 = no response
  std::string error;             // failure detail
  double ttft = -1;              // send -> first content token; -1 = none
  double e2e = 0;                // send -> end of stream
  std::vector<double> chunk_at;  // arrival of each content chunk
  std::vector<int64_t> chunk_tokens;  // tokens of each content chunk
  std::vector<double> itl;       // inter-token latencies (see file comment)
  int64_t output_tokens = 0;     // usage.completion_tokens, else counted
  int64_t prompt_tokens = -1;    // usage.prompt_tokens; -1 = not reported
  bool usage_seen = false;       // a usage object with completion_tokens
  std::string finish_reason;     // last finish_reason seen

  bool ok() const { return failure == FailureKind::kNone; }
  std::optional<double> tpot() const;
};

// Feeds one stream's events into a RequestResult.
class StreamAccumulator {
 public:
  // `result` must outlive the accumulator; its sent_at is the time base.
  explicit StreamAccumulator(RequestResult* result) : r_(result) {}

  // Body bytes that arrived at `at` (seconds since the run's start).
  void OnBytes(std::string_view bytes, double at);
  // The body ended cleanly at `at`: final checks, E2E, token totals.
  void OnEnd(double at);
  // The request failed at `at` (transport, timeout or HTTP status).
  void Fail(FailureKind kind, std::string error, double at);

  bool saw_done() const { return done_; }

 private:
  void OnEvent(const SseEvent& ev, double at);

  RequestResult* r_;
  SseParser parser_;
  std::vector<SseEvent> events_;
  bool done_ = false;
  int64_t counted_ = 0;             // content tokens counted so far
  int64_t last_usage_tokens_ = 0;   // per-chunk usage seen so far
};

}  // namespace weft::loadgen
