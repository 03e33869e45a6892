// What the scalar kernel files share: the adapters from a one-row dot to a
// table DotFn, the Rope step (also the SIMD Rope's tail) and the Fill
// function of the K-quant twins. kernel_table.h's
// rule for headers applies (declarations, constants and `static` helpers
// only).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "tensor/blocks.h"

namespace weft::kernels {

// A DotFn from kDot(k, weight row, activation row): one row at a time.
template <float (*kDot)(int64_t, const void*, const void*)>
static void DotCols(int64_t k, const void* w, const void* xq, size_t xq_stride, int nc,
                    float* out) {
  for (int c = 0; c < nc; ++c) {
    out[c] = kDot(k, w, static_cast<const char*>(xq) + c * xq_stride);
  }
}

// Rotates pairs from .. half - 1 of one head v (cs: cos, sin per pair):
// pairs (i, i + half) when neox, else (2i, 2i + 1). The scalar Rope, and
// the SIMD ones' tail.
static inline void RopePairs(float* v, const float* cs, int64_t from, int64_t half, bool neox) {
  for (int64_t i = from; i < half; ++i) {
    const int64_t i0 = neox ? i : 2 * i, i1 = neox ? i + half : 2 * i + 1;
    const float c = cs[2 * i], s = cs[2 * i + 1];
    const float x0 = v[i0], x1 = v[i1];
    v[i0] = x0 * c - x1 * s;
    v[i1] = x0 * s + x1 * c;
  }
}

// A DotFn's one-row dot for the formats against Q8_K activations:
// sum_b kBlockDot(weight super-block b, activation block b), in block order.
template <typename Block, float (*kBlockDot)(const Block&, const BlockQ8_K&)>
static float DotSuperBlocks(int64_t k, const void* w, const void* x) {
  const Block* wb = static_cast<const Block*>(w);
  const BlockQ8_K* a = static_cast<const BlockQ8_K*>(x);
  float s = 0;
  for (int64_t b = 0; b < k / kQK_K; ++b) s += kBlockDot(wb[b], a[b]);
  return s;
}

// scalar_kquants.cc: the K-quant entries (Q2_K .. Q6_K) against Q8_K rows
// made by `quantize_q8k` (the table's Q8_K conversion).
void FillScalarKQuants(KernelTable* t, QuantizeActFn quantize_q8k);

}  // namespace weft::kernels
