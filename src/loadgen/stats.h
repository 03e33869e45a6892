// Latency statistics of the serving benchmark: percentiles (linear
// interpolation, numpy's default), distribution summaries, TPOT and SLOs.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace weft::loadgen {

// The q-th percentile (q in [0, 100]) of `sorted` (ascending), interpolating
// linearly between the two nearest ranks like numpy.percentile's default:
// rank = q/100 * (n-1). Returns 0 for an empty input.
double PercentileSorted(std::span<const double> sorted, double q);
// Same, on unsorted values (copies and sorts).
double Percentile(std::span<const double> values, double q);

// Summary of one latency or size distribution. All zero when count == 0.
struct Distribution {
  int64_t count = 0;  // samples
  double mean = 0;    // arithmetic mean
  double min = 0;     // smallest sample
  double p50 = 0;     // median
  double p90 = 0;     // 90th percentile
  double p99 = 0;     // 99th percentile
  double max = 0;     // largest sample
};
Distribution Summarize(std::span<const double> values);

// Time per output token after the first: (e2e - ttft) / (out - 1); nullopt
// when out <= 1 (undefined).
std::optional<double> Tpot(double e2e_s, double ttft_s, int64_t output_tokens);

// Service-level objectives for goodput; an unset bound always holds.
struct Slo {
  std::optional<double> ttft_ms;  // TTFT <= this
  std::optional<double> tpot_ms;  // TPOT <= this (requests with 1 token pass)
  std::optional<double> e2e_ms;   // end-to-end latency <= this
  bool any() const { return ttft_ms || tpot_ms || e2e_ms; }
};

// Whether one completed request meets every bound of `slo`.
bool MeetsSlo(const Slo& slo, double ttft_s, std::optional<double> tpot_s,
              double e2e_s);

}  // namespace weft::loadgen
