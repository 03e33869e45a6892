// The plain data that passes between the scheduler and the executor for one
// iteration ("step"): who runs, how many tokens each, where their KV goes.
//
// Thread safety: values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/request.h"
#include "kv/block_pool.h"
#include "sampling/params.h"

namespace weft::engine {

// One sequence's share of a step. Prefill, chunked prefill and decode are the
// same thing: feed tokens [start_pos, start_pos + num_new_tokens).
struct ScheduledSeq {
  RequestId id = 0;
  int start_pos = 0;        // position of the first new token
  int num_new_tokens = 0;   // >= 1
  bool needs_logits = false;  // the chunk reaches the end: sample a token
  // Speculative decoding: the last num_draft_tokens of `tokens` are guesses
  // to verify (the sequence's decode token comes first). The executor
  // computes logits at each of the last 1 + num_draft_tokens positions and
  // returns the accepted guesses plus one token (see SampledToken).
  int num_draft_tokens = 0;
  std::vector<TokenId> tokens;   // [num_new_tokens] input token ids
  std::vector<int64_t> slots;    // [num_new_tokens] KV slot per new token
                                 // (block * block_size + offset)
  std::vector<kv::BlockId> block_table;  // [ceil((start_pos + n) / bs)]
                                         // kNullBlock: outside the window
  // The local KV group's table (sliding-window layers of a hybrid model,
  // kv::kLocalGroup), same length as block_table; empty without that group.
  std::vector<kv::BlockId> local_block_table;
  // The request's sampling parameters (never null when built by the
  // scheduler; shared and immutable).
  std::shared_ptr<const sampling::SamplingParams> sampling;
  int num_prompt_tokens = 0;  // the request's prompt length
  // Set when the request is (re)admitted to running (its first chunk after
  // submission or after a preemption): every token the request holds,
  // prompt then output, so that an executor that has not seen it can build
  // per-request state (e.g. a sampler's repetition history). Else false and
  // all_tokens is empty.
  bool admitted = false;
  std::vector<TokenId> all_tokens;
  // Prompt logprobs (RequestSpec::prompt_logprobs): for the positions
  // [prompt_logprobs_from, prompt_logprobs_from + prompt_targets.size())
  // of this chunk, the executor reports the logprob of the prompt token
  // that follows each (prompt_targets[i]) with prompt_logprobs_top
  // alternatives. Empty: none in this chunk.
  int prompt_logprobs_from = 0;
  std::vector<TokenId> prompt_targets;
  int prompt_logprobs_top = 0;
};

struct StepPlan {
  uint64_t step = 0;                 // 1, 2, ... (0: never scheduled)
  std::vector<ScheduledSeq> seqs;    // decodes first, then prefill chunks
  std::vector<kv::BlockCopy> copies; // copy-on-write, before the forward
                                     // (each tagged with its KV group)
  std::vector<RequestId> preempted;  // lost their KV this step (requeued)
  std::vector<RequestId> freed;      // finished since the previous plan:
                                     // drop any per-sequence state
  int num_batched_tokens = 0;        // sum of num_new_tokens
  int budget = 0;                    // tokens this pass could hold: the
                                     // configured budget, the idle
                                     // prefill budget without decodes, or
                                     // under target_itl_ms the tokens the
                                     // time left after the decodes allows
                                     // (estimated at context 0; never
                                     // below num_batched_tokens)
  // The pass cost model's prediction of this pass's time, ms; < 0 before
  // the model is ready.
  double predicted_ms = -1;
  // The latency target this pass was sized for, ms; < 0 when none was
  // (target off, model not ready, or no decode in the pass).
  double target_ms = -1;
  // Of Schedule, the ms the proposer took (a draft model's forwards for
  // this pass); 0 without speculation or with a cheap proposer's.
  double draft_ms = 0;

  bool empty() const { return seqs.empty(); }
};

// The executor's answer for a sequence with needs_logits: one token, or
// for a sequence with draft tokens 1 to 1 + num_draft_tokens of them in
// order (consecutive entries with the same id): the guesses that the
// sampler confirmed, then the token it sampled where it first disagreed
// (or after the last guess). An exhausted entry ends the run.
struct SampledToken {
  RequestId id = 0;
  TokenId token = 0;
  float logprob = 0.0f;  // of the sampled token, if computed
  // The request's structured-output constraint can no longer continue:
  // `token` is not a token, and the request ends as kLength without it.
  bool exhausted = false;
  // The most likely alternatives (token, logprob), descending, when the
  // request asked for sampling.logprobs = N > 0; else empty.
  std::vector<std::pair<TokenId, float>> top_logprobs;
};

// How many of `s`'s draft tokens its SampledTokens (`emitted`, in order)
// confirmed: the leading guesses that an emitted, non-exhausted token
// equals. Their KV (written at their positions in this pass) stays valid.
int AcceptedDrafts(const ScheduledSeq& s,
                   std::span<const SampledToken* const> emitted);

// The logprob of one prompt token given the tokens before it.
struct PromptTokenLogprob {
  TokenId token = 0;
  float logprob = 0.0f;
  std::vector<std::pair<TokenId, float>> top;  // alternatives, descending
};

// What the executor computed for one ScheduledSeq's prompt_targets.
struct PromptLogprobs {
  RequestId id = 0;
  int first_token = 1;  // prompt index of entries[0] (its position + 1)
  std::vector<PromptTokenLogprob> entries;
};

// What a client learns after a step (or an abort): zero or one new token,
// and whether the request is done.
struct RequestEvent {
  RequestId id = 0;
  std::vector<TokenId> new_tokens;  // tokens not reported before
  std::vector<float> logprobs;      // parallel to new_tokens: the chosen
                                    // token's logprob (0 when not asked)
  // Parallel to new_tokens: the top alternatives per token (empty inner
  // vectors when not requested).
  std::vector<std::vector<std::pair<TokenId, float>>> top_logprobs;
  bool finished = false;
  FinishReason reason = FinishReason::kNone;
  std::string error;                // when reason == kError
  int num_prompt_tokens = 0;        // for usage accounting
  int num_output_tokens = 0;        // so far
  int num_cached_tokens = 0;        // prompt tokens served from the cache
  // On the final event of a request that was scheduled: seconds from
  // Engine::Submit to its first pass (vLLM's queue time).
  std::optional<double> queue_seconds;
  // Prompt tokens' logprobs (RequestSpec::prompt_logprobs), in prompt order
  // across events, starting at prompt_logprobs_first (>= 1).
  std::vector<PromptTokenLogprob> prompt_logprobs;
  int prompt_logprobs_first = 1;
};

}  // namespace weft::engine
