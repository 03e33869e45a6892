// A generation request as the scheduler sees it: token ids in, token ids
// out, plus the plain-data stop conditions. No text, no tensors.
//
// The one rule for prefill, decode and chunked prefill: tokens() is the
// prompt followed by the output so far; num_computed_tokens (KV written)
// catches up with num_tokens() a step-budgeted chunk at a time, and the
// step that reaches it samples the next token. Preemption resets
// num_computed_tokens to 0 and keeps the output, so the prompt plus output
// is recomputed and nothing already emitted is emitted again.
//
// Thread safety: none; owned by the scheduler.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/block_pool.h"
#include "sampling/params.h"

namespace weft::engine {

using RequestId = int64_t;
using TokenId = kv::TokenId;

enum class RequestStatus { kWaiting, kRunning, kPreempted, kFinished };

enum class FinishReason {
  kNone,        // still going
  kStop,        // a stop token id (EOS, or a stop string via the engine)
  kLength,      // max_tokens reached, or the context (max_model_len) is full
  kAborted,     // Abort() / client went away
  kError,       // cannot be served (e.g. larger than the whole KV cache)
};

std::string_view RequestStatusName(RequestStatus s);
std::string_view FinishReasonName(FinishReason r);  // "stop", "length", ...

// When to stop generating, on token ids. Stop strings need text and are
// checked by the engine, which then calls Scheduler::Finish(id, kStop).
struct StopConditions {
  int max_tokens = 256;                 // output tokens at most (>= 1)
  int min_tokens = 0;                   // stop ids are ignored before this
  std::vector<TokenId> stop_token_ids;  // e.g. EOS, <end_of_turn>
};

// What a client submits.
struct RequestSpec {
  RequestId id = 0;              // unique among live requests
  std::vector<TokenId> prompt;   // non-empty
  int priority = 0;              // lower is served first; FCFS within a class
  StopConditions stop;           // stop conditions
  // Token selection, validated by the submitter (Validate(vocab_size));
  // sampling.logprobs = how many top alternatives to return per token.
  sampling::SamplingParams sampling;
  // Another choice (n > 1) of request `sibling_of`'s prompt: queued as if
  // it had arrived with that request (when it is still live), and never
  // refused for a full queue (its call was let in with the first choice).
  std::optional<RequestId> sibling_of;
  // >= 0: report the logprob of every prompt token after the first (the
  // OpenAI completions `echo` with `logprobs`) with this many top
  // alternatives. Such a request computes its whole prompt (no prefix
  // cache hit: a cached token has no logits).
  int prompt_logprobs = -1;
  // Speculative decoding for this request: nullopt = the server's default
  // (on when SchedulerConfig::spec_method is not kOff); false = never;
  // true = when the server has a proposer.
  std::optional<bool> speculative;
};

struct Request {
  RequestId id = 0;
  std::vector<TokenId> tokens;   // prompt then output
  int num_prompt_tokens = 0;     // original prompt length
  int num_computed_tokens = 0;   // KV written for tokens[0, this)
  int num_cached_tokens = 0;     // of the prompt, served by the prefix cache
  int num_preemptions = 0;       // times preempted and recomputed
  RequestStatus status = RequestStatus::kWaiting;
  FinishReason finish_reason = FinishReason::kNone;
  std::string error;             // when finish_reason == kError
  uint64_t arrival = 0;          // submission order (FCFS key)
  uint64_t admission = 0;        // order of the latest admission to running
  int priority = 0;              // lower first
  int prompt_logprobs = -1;      // from the spec
  int prompt_logprobs_sent = 0;  // prompt tokens [1, this] reported
  StopConditions stop;
  bool speculative = false;      // drafts may be planned for it
  // Speculation's recent record, decayed per verifying pass: draft
  // positions tried and accepted (a pass that accepts a of k tried a + 1
  // positions when a < k, else k).
  double spec_tried = 0;
  double spec_accepted = 0;
  // From the spec; shared with every ScheduledSeq of the request.
  std::shared_ptr<const sampling::SamplingParams> sampling;

  int num_tokens() const { return static_cast<int>(tokens.size()); }
  int num_output_tokens() const { return num_tokens() - num_prompt_tokens; }
  std::span<const TokenId> output() const {
    return std::span<const TokenId>(tokens).subspan(
        static_cast<size_t>(num_prompt_tokens));
  }
  bool finished() const { return status == RequestStatus::kFinished; }
};

}  // namespace weft::engine
