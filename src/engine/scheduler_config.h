// Scheduling policy knobs. Every field has a default; Validate() before use.
//
// The defaults are tuned for CPU serving (measured with `weft bench engine
// --workload S2` on Gemma 3 270M, 2 cores): a prompt token costs about half
// a decode sequence's pass share, so with 8 streams decoding a 24-token
// prompt chunk keeps their inter-token latency near 2x of decode-only
// passes (16: 1.8x, 32: 2.5-3.2x, 64: 4.6x, unchunked 2048: 160x), at the
// price of a longer TTFT for long prompts (2048 tokens: about 1.6x the
// unchunked TTFT). The budget is max_seqs + prefill_chunk so that a prompt
// still gets a full chunk when every other running sequence decodes.
#pragma once

#include <algorithm>

#include "util/status.h"
#include "util/strings.h"

namespace weft::engine {

// Which waiting request runs first (vLLM's --scheduling-policy).
enum class SchedulingPolicy {
  kFcfs,      // arrival order; a request with priority != 0 is refused
  kPriority,  // RequestSpec::priority (lower first), then arrival; KV
              // pressure preempts the lowest priority (highest value) first
};

// Who guesses the tokens a decoding sequence verifies in its next pass
// (speculative decoding; vLLM's speculative_config "method").
enum class SpecMethod {
  kOff,    // one token per decoding sequence per pass
  kNgram,  // prompt lookup in the sequence's own tokens (NgramProposer)
  kDraft,  // a draft model's greedy guesses (a Proposer handed to
           // Scheduler::Create / EngineOptions::proposer; runtime/
           // DraftProposer)
};

struct SchedulerConfig {
  // Token budget of one forward pass (decode tokens + prompt chunks).
  // Must be >= max_seqs so that every running sequence can decode each pass.
  int max_batched_tokens = 56;
  // Running sequences at most (the decode batch size limit).
  int max_seqs = 32;
  // Prompt tokens one sequence may feed per pass; 0 = no per-sequence cap
  // (a prompt is still split across passes if it exceeds the pass budget).
  int prefill_chunk = 24;
  // Prompt tokens a pass may take when no running sequence is decoding
  // (there is no stream whose inter-token latency a long pass would hurt):
  // the pass budget and the per-sequence chunk both rise to this, so a lone
  // prompt prefills in large, efficient chunks. 0 = off (always
  // max_batched_tokens / prefill_chunk).
  int idle_prefill_tokens = 512;
  // Prompt tokens per pass, over all requests, of those that report their
  // prompt's logprobs (RequestSpec::prompt_logprobs): each takes a
  // vocabulary-sized row of logits (1 MiB for Gemma 3's 262144 tokens), so
  // 32 keep a pass's logits near 32 MiB, where a 512-token idle chunk
  // would take 512 MiB.
  int prompt_logprobs_chunk = 32;
  // Reuse KV of full blocks that earlier requests computed (prefix cache).
  bool enable_prefix_caching = true;
  // Waiting requests at most; Submit beyond it fails with RESOURCE_EXHAUSTED.
  int max_queue = 1024;
  // Context length: a request stops ("length") when it holds this many
  // tokens; prompts must be shorter.
  int max_model_len = 8192;
  // Waiting-queue order and preemption victims (see SchedulingPolicy).
  SchedulingPolicy policy = SchedulingPolicy::kFcfs;
  // Inter-token latency target, ms; 0 = off (the fixed max_batched_tokens
  // and prefill_chunk above). When set, a pass that carries decodes takes
  // every decode, then as many prompt tokens as the online pass cost model
  // (engine/pass_cost_model.h) predicts still fit in the target, up to
  // MaxPassTokens() in all and MaxChunk() per sequence. Passes without
  // decodes keep the idle budget (throughput). Until the model has seen
  // cost_model_min_samples passes the fixed budget applies.
  double target_itl_ms = 0;
  // Without target_itl_ms: when > 0, the target of each pass with decodes
  // is this multiple of the predicted time of its decodes alone (the
  // slowdown a stream accepts while prompts prefill, whatever the machine,
  // model or load); 0 = off.
  double target_itl_ratio = 0;
  // Under target_itl_ms, prompt tokens a pass with decodes takes even when
  // the decodes alone fill the target (an overloaded or infeasible target),
  // so that waiting prompts still progress. 1: deep in a long prompt one
  // token's attention can cost ~2 ms on a small CPU, so a floor of 8 broke
  // targets that 1-6 tokens a pass hold (S2, bench/results/slo-spr.md).
  int min_prefill_tokens = 1;
  // Passes over which an observation's weight in the cost model decays by
  // 1/e (the model follows a machine whose speed drifts).
  int cost_model_window = 256;
  // Passes the cost model must see before target_itl_ms takes effect.
  int cost_model_min_samples = 16;
  // Speculative decoding: the proposer (kOff: none). Draft tokens are
  // planned after every sequence's decode token and every prompt chunk,
  // from what the pass budget (and under a time target, its time) leaves.
  SpecMethod spec_method = SpecMethod::kOff;
  // Draft tokens per sequence per pass at most (vLLM's
  // num_speculative_tokens; 16 as llama-server's --draft-max). Adaptive k
  // picks fewer where they do not pay. S5 c=1 on/off, default model,
  // quiet, 4 reps: 8 gave 1.91/1.86/1.76/1.62x, 16 gave
  // 1.87/1.91/1.85/1.56x (medians 1.81x, 1.86x); S1 c=16 and S5 c=16 stay
  // at 1.00x.
  int spec_k_max = 16;
  // The n-gram proposer's match lengths: longest first, down to the
  // shortest (vLLM's prompt_lookup_max / prompt_lookup_min).
  int spec_ngram_min = 1;
  int spec_ngram_max = 4;
  // true: each sequence's k maximizes the pass's expected tokens per
  // predicted ms, from its recent acceptance rate and the pass cost model
  // (no drafts until the model is ready; 0 once the batch is
  // compute-bound). false: every guess up to spec_k_max is verified (tests).
  bool spec_adaptive = true;

  Status Validate() const {
    if (max_seqs < 1) return InvalidArgumentError("max_seqs must be >= 1");
    if (max_batched_tokens < max_seqs) {
      return InvalidArgumentError(StrFormat(
          "max_batched_tokens (%d) must be >= max_seqs (%d)",
          max_batched_tokens, max_seqs));
    }
    if (prefill_chunk < 0) {
      return InvalidArgumentError("prefill_chunk must be >= 0");
    }
    if (idle_prefill_tokens < 0) {
      return InvalidArgumentError("idle_prefill_tokens must be >= 0");
    }
    if (max_queue < 1) return InvalidArgumentError("max_queue must be >= 1");
    if (prompt_logprobs_chunk < 1) {
      return InvalidArgumentError("prompt_logprobs_chunk must be >= 1");
    }
    if (max_model_len < 2) {
      return InvalidArgumentError("max_model_len must be >= 2");
    }
    if (!(target_itl_ms >= 0)) {
      return InvalidArgumentError("target_itl_ms must be >= 0");
    }
    if (!(target_itl_ratio == 0 || target_itl_ratio >= 1)) {
      return InvalidArgumentError("target_itl_ratio must be 0 (off) or >= 1");
    }
    if (min_prefill_tokens < 0) {
      return InvalidArgumentError("min_prefill_tokens must be >= 0");
    }
    if (cost_model_window < 2 || cost_model_min_samples < 1) {
      return InvalidArgumentError(
          "cost_model_window must be >= 2 and cost_model_min_samples >= 1");
    }
    if (spec_k_max < 1 || spec_k_max > 64) {
      return InvalidArgumentError("spec_k_max must be in [1, 64]");
    }
    if (spec_ngram_min < 1 || spec_ngram_max < spec_ngram_min) {
      return InvalidArgumentError(
          "spec n-gram lengths need 1 <= spec_ngram_min <= spec_ngram_max");
    }
    return OkStatus();
  }

  // Passes with decodes are sized by time (target_itl_ms or _ratio).
  bool timed() const { return target_itl_ms > 0 || target_itl_ratio > 0; }

  // Prompt tokens one sequence may feed in a pass that carries decodes.
  int ChunkCap() const {
    return prefill_chunk > 0 ? prefill_chunk : max_batched_tokens;
  }
  // The most prompt tokens one sequence may feed in one pass.
  int MaxChunk() const { return std::max(ChunkCap(), idle_prefill_tokens); }
  // The most tokens one pass may hold.
  int MaxPassTokens() const {
    return std::max(max_batched_tokens, idle_prefill_tokens);
  }
};

}  // namespace weft::engine
