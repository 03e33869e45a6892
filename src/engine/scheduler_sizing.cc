// How big a pass is: the fixed token budget, the idle budget, or (with
// SchedulerConfig::target_itl_ms) the time the pass cost model says the
// decodes leave; and the feed of that model.
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_pass.h"

namespace weft::engine {

void Scheduler::SizePass(const std::vector<RequestId>& decodes,
                         Pass* pass) const {
  if (decodes.empty() && config_.idle_prefill_tokens > 0) {
    // No stream waits on this pass: prompts may take the larger idle
    // budget in larger chunks.
    pass->budget = config_.MaxPassTokens();
    pass->chunk_cap = config_.MaxChunk();
  } else if (!decodes.empty() && config_.timed() && cost_.ready()) {
    // Time-sized: the decodes' chunks are charged as they are planned.
    PassFeatures f;
    for (RequestId id : decodes) f.Add(Find(id)->num_computed_tokens, 1, true);
    const double decode_ms = cost_.Predict(f);
    const double target = config_.target_itl_ms > 0
                              ? config_.target_itl_ms
                              : config_.target_itl_ratio * decode_ms;
    // Aim below the target by the model's tail error, so that the slow
    // passes (p90), not the typical ones, land on it.
    const double aim = target / cost_.Headroom();
    pass->timed = true;
    pass->time_left_ms = aim - cost_.coefficients().fixed_ms;
    pass->budget = config_.MaxPassTokens();
    pass->chunk_cap = config_.MaxChunk();
    pass->plan.target_ms = target;
    // The budget reported: the decodes plus the prompt tokens that the time
    // they leave would allow at context 0.
    const double left = aim - decode_ms;
    const int d = static_cast<int>(decodes.size());
    pass->plan.budget =
        d + std::max(cost_.MaxChunkWithin(left, 0, -1, pass->budget - d),
                     config_.min_prefill_tokens);
    pass->plan.budget = std::min(pass->plan.budget, pass->budget);
    return;
  } else {
    pass->budget = config_.max_batched_tokens;
    pass->chunk_cap = config_.ChunkCap();
  }
  pass->plan.budget = pass->budget;
}

int Scheduler::TimedCap(int start_pos, int remaining, int cap,
                        const Pass& pass) const {
  if (!pass.timed || cap <= 0) return cap;
  int n = cost_.MaxChunkWithin(pass.time_left_ms, start_pos, remaining, cap);
  if (!pass.took_prefill) n = std::max(n, std::min(cap, config_.min_prefill_tokens));
  return n;
}

PassFeatures Scheduler::FeaturesOf(const StepPlan& plan) {
  PassFeatures f;
  for (const ScheduledSeq& s : plan.seqs) {
    f.Add(s.start_pos, s.num_new_tokens,
          s.needs_logits ? 1 + s.num_draft_tokens : 0);
  }
  return f;
}

void Scheduler::ObservePass(const StepPlan& plan, double ms) {
  if (plan.empty()) return;
  cost_.Observe(FeaturesOf(plan), ms);
}

}  // namespace weft::engine
