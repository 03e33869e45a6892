// The measuring half of `weft bench engine` (apps/bench/bench_engine.cc): seeded
// random-token workloads, one in-process engine run per scheduler
// configuration, and the latency figures of that run.
//
// Thread safety: RunPoint drives its own engine (its callbacks run on the
// engine thread and share state under a mutex); the rest are plain values.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model/model.h"
#include "util/status.h"

namespace weft::apps::bench_engine {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One benchmark configuration (a point of the sweep).
struct BenchPoint {
  int64_t concurrency = 1;  // closed loop: requests in flight; 0 = no cap
  double rate = 0;          // > 0: Poisson arrivals per second
  int64_t prefill_chunk = 512;
  int64_t max_batched_tokens = 2048;
  int64_t max_seqs = 64;
  double target_itl_ms = 0;  // > 0: passes sized to this ITL (ms)
  double target_itl_ratio = 0;  // > 0: to this multiple of decode time
  int64_t min_prefill_tokens = 8;  // timed passes: first chunk's floor
  std::string label;  // workload column name ("" for sweeps)
};

// Appends, for each ITL target (ms) and each ratio, a copy of configs[0]
// with passes sized to it (SchedulerConfig::min_prefill_tokens =
// min_prefill). An empty string, or the message for a bad value.
std::string AddTimedConfigs(const std::vector<double>& targets_ms,
                            const std::vector<double>& ratios, int64_t min_prefill,
                            std::vector<BenchPoint>* configs);

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

struct BenchResult {
  BenchPoint point;
  int num_ok = 0;
  int num_failed = 0;
  double duration_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  Percentiles ttft_ms, itl_ms, e2e_ms, tpot_ms;
  engine::SchedulerStats stats;
  engine::EngineStats loop;
  // S2 only: gaps between the streams' tokens that end while a long prompt
  // is being prefilled (its arrival .. its first token) and all others.
  Percentiles itl_prefill_ms, itl_base_ms, long_ttft_ms;
  int64_t num_prefill_gaps = 0, num_base_gaps = 0;
};

// Per-request timing, filled by the engine callback.
struct Timing {
  Clock::time_point submit, first, last, done;
  int tokens = 0;
  bool finished = false;
  bool failed = false;
  std::vector<double> itl_ms;
  std::vector<Clock::time_point> token_times;  // every token's arrival
};

struct Workload {
  std::vector<std::vector<engine::TokenId>> prompts;
  int output_len = 0;
  // Optional, per request: output length (overrides output_len), fixed
  // arrival offset in seconds (all requests then arrive on this schedule,
  // with no concurrency cap), and "long" (an S2 long-prompt request).
  std::vector<int> output_lens;
  std::vector<double> arrival_s;
  std::vector<bool> is_long;

  int OutputLen(size_t i) const {
    return i < output_lens.size() ? output_lens[i] : output_len;
  }
  int MaxLen() const {
    int m = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      m = std::max(m, static_cast<int>(prompts[i].size()) + OutputLen(i));
    }
    return m;
  }
};

// Linear interpolation between closest ranks (numpy's default).
Percentiles Summarize(std::vector<double> v);

// n prompts of prompt_len random plain-vocabulary ids (seeded), each
// generating output_len tokens.
Workload MakeWorkload(const model::ModelConfig& mc, int n, int prompt_len,
                      int output_len, uint64_t seed);

// One measured run of workload `w` under configuration `pt` on a fresh
// engine (ModelExecutor with `threads` threads, `kv_blocks` blocks of 16).
StatusOr<BenchResult> RunPoint(const model::Model& model, const Workload& w,
                               const BenchPoint& pt, int64_t kv_blocks,
                               int threads, uint64_t seed,
                               const engine::EngineOptions& eo);

}  // namespace weft::apps::bench_engine
