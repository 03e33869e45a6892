// Executor: what runs a StepPlan. The model layer implements it (forward
// pass over the scheduled tokens, KV writes into plan slots, CoW copies
// first, sampling for sequences with needs_logits); tests use a fake.
//
// Thread safety: Execute is only called from the engine's step-loop thread.
#pragma once

#include <vector>

#include "engine/step_plan.h"
#include "util/status.h"

namespace weft::engine {

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one pass. Returns exactly one SampledToken per scheduled sequence
  // with needs_logits. An error fails every request in the plan.
  virtual StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) = 0;
};

}  // namespace weft::engine
