// Scheduler internals shared by scheduler.cc and scheduler_sizing.cc: the
// state of one Schedule() call.
#pragma once

#include <utility>
#include <vector>

#include "engine/scheduler.h"

namespace weft::engine {

// The state of one Schedule() call.
struct Scheduler::Pass {
  StepPlan plan;
  int budget = 0;     // tokens left in this pass
  int chunk_cap = 0;  // prompt tokens one sequence may feed in this pass
  // Prompt-logprob positions (each a logits row) this pass may still take,
  // over all its sequences (SchedulerConfig::prompt_logprobs_chunk).
  int prompt_logprob_rows = 0;
  std::vector<std::pair<RequestId, kv::BlockCopy>> copies;  // tagged by seq
  // Sized by time (target_itl_ms): the predicted ms still free, and whether
  // a prompt chunk has been taken (the first gets min_prefill_tokens).
  bool timed = false;
  double time_left_ms = 0;
  bool took_prefill = false;
};

}  // namespace weft::engine
