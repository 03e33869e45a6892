#include "util/check.h"

#include <cstdio>
#include <cstdlib>

namespace weft::internal {

CheckFailure::CheckFailure(const char* file, int line, const char* cond) {
  os_ << file << ":" << line << ": CHECK failed: " << cond << " ";
}

CheckFailure::~CheckFailure() {
  std::fprintf(stderr, "%s\n", os_.str().c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace weft::internal
