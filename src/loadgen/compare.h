// `weft bench compare A.json B.json`: for each level present in both
// results, the ratio B/A of every headline metric, as a markdown table.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "util/status.h"

namespace weft::loadgen {

// Checks that `doc` is a weft-bench-serve result (format and levels).
Status ValidateResult(const nlohmann::json& doc);

// The comparison table; `name_a`/`name_b` head the value columns.
StatusOr<std::string> CompareReport(const nlohmann::json& a,
                                    const nlohmann::json& b,
                                    const std::string& name_a,
                                    const std::string& name_b);

}  // namespace weft::loadgen
