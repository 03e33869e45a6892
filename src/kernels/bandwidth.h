// A memory read-bandwidth probe for reports: all pool threads read disjoint
// slices of a large buffer with the widest loads the CPU has (the active
// table's read_bytes: zmm on AVX-512, ymm on AVX2).
//
// Thread safety: uses the pool (one ParallelFor at a time on it).
#pragma once

#include <cstddef>

#include "kernels/thread_pool.h"

namespace weft::kernels {

// Best of `repeats` passes over a `bytes` buffer (rounded up to 64 KiB per
// thread), in GB/s (1e9 bytes per second). pool may be null (one thread).
double MeasureReadBandwidth(ThreadPool* pool, size_t bytes = size_t{1} << 30,
                            int repeats = 3);

}  // namespace weft::kernels
