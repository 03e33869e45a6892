// Writing a `weft bench` verb's --json file, the same way for every verb.
#pragma once

#include <cstdio>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace weft::apps {

// Writes `j` (indented, newline-terminated) to `path`. On failure prints
// "weft bench VERB: cannot write PATH" on stderr and returns false.
inline bool WriteBenchJson(const std::string& path, const nlohmann::json& j,
                           const char* verb) {
  std::ofstream f(path);
  f << j.dump(2) << "\n";
  if (!f.good()) {
    std::fprintf(stderr, "weft bench %s: cannot write %s\n", verb, path.c_str());
    return false;
  }
  return true;
}

}  // namespace weft::apps
