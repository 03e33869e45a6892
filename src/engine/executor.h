// Executor: what runs a StepPlan. The model layer implements it (forward
// pass over the scheduled tokens, KV writes into plan slots, CoW copies
// first, sampling for sequences with needs_logits); tests use a fake.
//
// Thread safety: Execute is only called from the engine's step-loop thread;
// ValidateRequest from any thread.
#pragma once

#include <vector>

#include "engine/step_plan.h"
#include "util/status.h"

namespace weft::engine {

// How the last Execute call's time splits, for the engine trace. A negative
// value means the executor does not measure it.
struct ExecuteTimes {
  double forward_ms = -1;  // the forward pass (incl. KV copies)
  double sample_ms = -1;   // token selection over the logits
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one pass. Returns exactly one SampledToken per scheduled sequence
  // with needs_logits. An error fails every request in the plan.
  virtual StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) = 0;
  // Checks a request against what only the executor knows (token ids
  // against the vocabulary, sampling parameters), so that a bad request is
  // refused at Submit instead of failing a whole pass. Called by
  // Engine::Submit on the submitting thread: must be thread-safe and must
  // not touch Execute's state. Default: everything is acceptable.
  virtual Status ValidateRequest(const RequestSpec& spec) const {
    (void)spec;
    return OkStatus();
  }
  // The split of the last Execute call's time (loop thread only, right
  // after Execute). Default: not measured.
  virtual ExecuteTimes LastExecuteTimes() const { return {}; }
  // The prompt logprobs the last Execute computed (ScheduledSeq::
  // prompt_targets), taken (loop thread only, right after Execute).
  // Default: none.
  virtual std::vector<PromptLogprobs> TakePromptLogprobs() { return {}; }
};

}  // namespace weft::engine
