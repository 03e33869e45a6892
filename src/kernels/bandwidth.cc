#include "kernels/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "kernels/isa.h"
#include "util/check.h"
#include "util/large_alloc.h"

namespace weft::kernels {

double MeasureReadBandwidth(ThreadPool* pool, size_t bytes, int repeats) {
  const int n_threads = pool != nullptr ? pool->num_threads() : 1;
  const size_t slice = std::max<size_t>((bytes / n_threads + 65535) / 65536 * 65536, 65536);
  const size_t total = slice * n_threads;
  // Huge pages as for the repacked weights (util/large_alloc.h), so that the
  // roofline is what a stream through such a buffer can reach.
  const LargeBuffer buf = LargeAlloc(total);
  CHECK(buf != nullptr) << "cannot allocate " << total << " bytes";
  const KernelTable& t = Kernels();
  std::atomic<uint64_t> sink{0};
  auto pass = [&](int64_t task, int) {
    char* p = reinterpret_cast<char*>(buf.get()) + static_cast<size_t>(task) * slice;
    sink.fetch_xor(t.read_bytes(p, slice), std::memory_order_relaxed);
  };
  // First touch from the threads that will read (pages on their node).
  auto touch = [&](int64_t task, int) {
    std::memset(buf.get() + static_cast<size_t>(task) * slice, static_cast<int>(task) + 1, slice);
  };
  if (pool != nullptr) {
    pool->ParallelFor(n_threads, touch);
  } else {
    touch(0, 0);
  }
  double best = 0;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (pool != nullptr) {
      pool->ParallelFor(n_threads, pass);
    } else {
      pass(0, 0);
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, static_cast<double>(total) / s / 1e9);
  }
  // Keep the reads observable.
  [[maybe_unused]] static volatile uint64_t g_sink;
  g_sink = sink.load();
  return best;
}

}  // namespace weft::kernels
