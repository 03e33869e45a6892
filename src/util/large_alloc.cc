#include "util/large_alloc.h"

#include <algorithm>
#include <cstdlib>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace weft {

void LargeFree::operator()(uint8_t* p) const { std::free(p); }

LargeBuffer LargeAlloc(size_t bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  const size_t rounded = (std::max<size_t>(bytes, 1) + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, rounded);
  if (p == nullptr) return LargeBuffer(nullptr);
#ifdef __linux__
  // Advice only: without THP (or with it off) the pages stay 4 KiB.
  ::madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return LargeBuffer(static_cast<uint8_t*>(p));
}

}  // namespace weft
