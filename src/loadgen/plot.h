// `weft bench plot`: one SVG with the TTFT and ITL CDFs of every level of
// every run, and output throughput vs concurrency (closed loop) or goodput
// (else request throughput) vs rate (open loop). Hand-written SVG.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/status.h"

namespace weft::loadgen {

struct PlotRun {
  std::string label;     // legend name
  nlohmann::json doc;    // a weft-bench-serve result
};

// "1, 2, 5 x 10^k" tick positions covering [lo, hi].
std::vector<double> NiceTicks(double lo, double hi, int target = 6);

StatusOr<std::string> PlotSvg(const std::vector<PlotRun>& runs);

}  // namespace weft::loadgen
