// A compute-ceiling probe for reports, the arithmetic counterpart of the
// bandwidth probe (bandwidth.h): all pool threads run the bare instruction
// sequence each matmul kernel family is built on (KernelTable::peak_loop),
// and the multiply-adds per second they reach bound what a kernel with the
// same sequence plus its loads, unpacking and scales can reach. A product's
// "compute floor" is its multiply-adds over that ceiling: the fastest its
// kernels could run on this CPU, however well tuned.
//
// Thread safety: uses the pool (one ParallelFor at a time on it).
#pragma once

#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "tensor/types.h"

namespace weft::kernels {

struct ComputePeaks {
  // Multiply-adds per second (in 1e9) of each PeakKind's sequence on all
  // threads together, best of the passes; all 0 when the active table has
  // no peak loops (scalar, AVX-512).
  double gmacs[kNumPeakKinds] = {};

  bool measured() const { return gmacs[0] > 0; }
};

// Measures every PeakKind with the active table: `repeats` passes of about
// `seconds` each per kind. pool may be null (one thread).
ComputePeaks MeasureComputePeaks(ThreadPool* pool, double seconds = 0.03,
                                 int repeats = 3);

// The sequence that bounds MatMul's kernels for weights of `type`.
// REQUIRES: MatMulSupports(type).
PeakKind PeakKindOf(GgmlType type);

// "int8_signed", "int8_unsigned", "f32_fma".
const char* PeakKindName(PeakKind kind);

}  // namespace weft::kernels
