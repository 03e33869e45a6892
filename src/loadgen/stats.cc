#include "loadgen/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace weft::loadgen {

double PercentileSorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 100.0);
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Percentile(std::span<const double> values, double q) {
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  return PercentileSorted(v, q);
}

Distribution Summarize(std::span<const double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  d.count = static_cast<int64_t>(v.size());
  d.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  d.min = v.front();
  d.max = v.back();
  d.p50 = PercentileSorted(v, 50);
  d.p90 = PercentileSorted(v, 90);
  d.p99 = PercentileSorted(v, 99);
  return d;
}

std::optional<double> Tpot(double e2e_s, double ttft_s, int64_t output_tokens) {
  if (output_tokens <= 1) return std::nullopt;
  return (e2e_s - ttft_s) / static_cast<double>(output_tokens - 1);
}

bool MeetsSlo(const Slo& slo, double ttft_s, std::optional<double> tpot_s,
              double e2e_s) {
  if (slo.ttft_ms && ttft_s * 1000.0 > *slo.ttft_ms) return false;
  if (slo.tpot_ms && tpot_s && *tpot_s * 1000.0 > *slo.tpot_ms) return false;
  if (slo.e2e_ms && e2e_s * 1000.0 > *slo.e2e_ms) return false;
  return true;
}

}  // namespace weft::loadgen
