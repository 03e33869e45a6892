// A memory read-bandwidth probe for reports: all pool threads read disjoint
// slices of a large buffer with the widest loads the CPU has (the active
// table's read_bytes: zmm on AVX-512, ymm on AVX2).
//
// Thread safety: uses the pool (one ParallelFor at a time on it); a
// ReadBandwidthProbe is for one thread at a time.
#pragma once

#include <cstddef>

#include "kernels/thread_pool.h"
#include "util/large_alloc.h"

namespace weft::kernels {

// A probe that keeps its buffer, allocated and first touched once, for
// repeated readings (say one right before each timed repetition of a
// benchmark, on a machine whose bandwidth drifts).
class ReadBandwidthProbe {
 public:
  // `bytes` rounded up to 64 KiB per thread; pool may be null (one thread)
  // and must outlive the probe.
  ReadBandwidthProbe(ThreadPool* pool, size_t bytes);

  // Best of `repeats` passes over the buffer, in GB/s (1e9 bytes per
  // second).
  double Measure(int repeats) const;

 private:
  ThreadPool* pool_;
  int n_threads_;
  size_t slice_;  // bytes per thread
  LargeBuffer buf_;
};

// Best of `repeats` passes over a fresh `bytes` buffer (a one-off
// ReadBandwidthProbe).
double MeasureReadBandwidth(ThreadPool* pool, size_t bytes = size_t{1} << 30,
                            int repeats = 3);

}  // namespace weft::kernels
