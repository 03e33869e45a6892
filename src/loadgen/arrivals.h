// Arrival times of an open-loop benchmark: a Poisson process (exponential
// gaps) or, with burstiness != 1, a gamma process with the same mean rate
// (shape = burstiness; < 1 burstier, > 1 more regular), like vLLM's
// benchmark_serving.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <vector>

namespace weft::loadgen {

struct ArrivalConfig {
  double rate = 1.0;        // mean requests per second (> 0)
  double burstiness = 1.0;  // gamma shape; 1 = Poisson
  uint64_t seed = 0;        // RNG seed (same seed, same times)
};

// The arrival times (seconds from start, non-decreasing) of `n` requests;
// the first arrives after one gap.
std::vector<double> ArrivalTimes(const ArrivalConfig& config, int64_t n);

}  // namespace weft::loadgen
