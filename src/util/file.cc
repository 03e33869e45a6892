#include "util/file.h"

#include <cstdio>
#include <fstream>
#include <sstream>

namespace weft {

StatusOr<std::string> ReadFileToString(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

uint64_t ReadProcKb(const std::string& path, const std::string& key) {
  std::ifstream f(path);
  const std::string format = key + ": %llu kB";
  std::string line;
  while (std::getline(f, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), format.c_str(), &kb) == 1) {
      return static_cast<uint64_t>(kb) * 1024;
    }
  }
  return 0;
}

}  // namespace weft
