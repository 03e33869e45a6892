#include "loadgen/arrivals.h"

#include <random>

#include "util/check.h"

namespace weft::loadgen {

std::vector<double> ArrivalTimes(const ArrivalConfig& config, int64_t n) {
  CHECK(config.rate > 0) << "rate must be positive";
  CHECK(config.burstiness > 0) << "burstiness must be positive";
  std::mt19937_64 rng(config.seed);
  // Gamma(shape k, scale theta) has mean k*theta = 1/rate.
  const double shape = config.burstiness;
  const double scale = 1.0 / (config.rate * shape);
  std::gamma_distribution<double> gap(shape, scale);
  std::vector<double> out;
  out.reserve(static_cast<size_t>(n > 0 ? n : 0));
  double t = 0;
  for (int64_t i = 0; i < n; ++i) {
    t += gap(rng);
    out.push_back(t);
  }
  return out;
}

}  // namespace weft::loadgen
