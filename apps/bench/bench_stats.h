// The measuring helpers of `weft bench model` and `weft bench kv`: timed
// repetitions and their summary, and the bytes and multiply-adds of a
// model's weight products.
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "kernels/compute_peak.h"
#include "model/model.h"
#include "util/status.h"

namespace weft::apps {

// Median, min and max of timed samples (seconds).
struct Stat {
  std::vector<double> samples;
  double median = 0, min = 0, max = 0;
};

Stat Summarize(std::vector<double> v);

// Runs fn once as a warm-up, then `reps` timed times.
// before(r) (a Status) runs untimed ahead of run r (0: the warm-up).
template <typename Fn, typename Before>
StatusOr<Stat> Time(int reps, Fn&& fn, Before&& before) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> t;
  for (int r = 0; r <= reps; ++r) {
    RETURN_IF_ERROR(before(r));
    const auto a = Clock::now();
    RETURN_IF_ERROR(fn());
    const double s = std::chrono::duration<double>(Clock::now() - a).count();
    if (r > 0) t.push_back(s);
  }
  return Summarize(std::move(t));
}

template <typename Fn>
StatusOr<Stat> Time(int reps, Fn&& fn) {
  return Time(reps, fn, [](int) { return OkStatus(); });
}

// Bytes of the weight matrices one single-token decode step reads (all
// layers + output; of a MoE layer the router and `experts_used` experts).
uint64_t WeightBytes(const model::ModelWeights& w, int64_t experts_used);

// Multiply-adds of the weight products: per token through the layers, and
// per row of logits through the output matrix.
struct WeightMacs {
  uint64_t layers = 0;
  uint64_t output = 0;
  // The same by the instruction sequence that bounds their kernels.
  uint64_t layers_by_kind[kernels::kNumPeakKinds] = {};
  uint64_t output_by_kind[kernels::kNumPeakKinds] = {};
};

// Multiply-adds per token (MoE: the router and `experts_used` experts).
WeightMacs CountWeightMacs(const model::ModelWeights& w, int64_t experts_used);

nlohmann::json StatJson(const Stat& s);

}  // namespace weft::apps
