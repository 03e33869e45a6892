// What the scalar kernel files share: the adapter from a one-row dot to a
// table DotFn, and the Fill function of the K-quant twins. kernel_table.h's
// rule for headers applies (declarations, constants and `static` helpers
// only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace weft::kernels {

// A DotFn from kDot(k, weight row, activation row): one row at a time.
template <float (*kDot)(int64_t, const void*, const void*)>
static void DotCols(int64_t k, const void* w, const void* xq, size_t xq_stride, int nc,
                    float* out) {
  for (int c = 0; c < nc; ++c) {
    out[c] = kDot(k, w, static_cast<const char*>(xq) + c * xq_stride);
  }
}

// scalar_kquants.cc: the K-quant entries (Q2_K .. Q6_K) against Q8_K rows
// made by `quantize_q8k` (the table's Q8_K conversion).
void FillScalarKQuants(KernelTable* t, QuantizeActFn quantize_q8k);

}  // namespace weft::kernels
