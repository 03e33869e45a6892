#include "kernels/bandwidth.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "kernels/isa.h"
#include "util/check.h"

namespace weft::kernels {

ReadBandwidthProbe::ReadBandwidthProbe(ThreadPool* pool, size_t bytes)
    : pool_(pool), n_threads_(pool != nullptr ? pool->num_threads() : 1) {
  slice_ = std::max<size_t>((bytes / n_threads_ + 65535) / 65536 * 65536, 65536);
  const size_t total = slice_ * n_threads_;
  // Huge pages as for the repacked weights (util/large_alloc.h), so that the
  // roofline is what a stream through such a buffer can reach.
  buf_ = LargeAlloc(total);
  CHECK(buf_ != nullptr) << "cannot allocate " << total << " bytes";
  // First touch from the threads that will read (pages on their node).
  auto touch = [&](int64_t task, int) {
    std::memset(buf_.get() + static_cast<size_t>(task) * slice_, static_cast<int>(task) + 1,
                slice_);
  };
  if (pool_ != nullptr) {
    pool_->ParallelFor(n_threads_, touch);
  } else {
    touch(0, 0);
  }
}

double ReadBandwidthProbe::Measure(int repeats) const {
  const KernelTable& t = Kernels();
  std::atomic<uint64_t> sink{0};
  auto pass = [&](int64_t task, int) {
    const uint8_t* p = buf_.get() + static_cast<size_t>(task) * slice_;
    sink.fetch_xor(t.read_bytes(p, slice_), std::memory_order_relaxed);
  };
  const size_t total = slice_ * n_threads_;
  double best = 0;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    const auto start = std::chrono::steady_clock::now();
    if (pool_ != nullptr) {
      pool_->ParallelFor(n_threads_, pass);
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

double MeasureReadBandwidth(ThreadPool* pool, size_t bytes, int repeats) {
  return ReadBandwidthProbe(pool, bytes).Measure(repeats);
}

}  // namespace weft::kernels
