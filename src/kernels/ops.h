// Vectorised elementwise kernels and single-query attention, dispatched
// through the active ISA table (isa.h). Each has a scalar twin in the
// scalar table; pass a table explicitly to force one.
//
// Thread safety: pure functions of their arguments.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace weft::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i]; w may be null (weight 1);
// out may alias x.
void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out);

enum class RopeStyle {
  kNormal,  // rotates pairs (2i, 2i+1) (llama)
  kNeox,    // rotates pairs (i, i + n_rot/2) (NeoX, Gemma, Qwen)
};

// Rotates the first n_rot dims of each head of x ([n_heads, head_dim]) in
// place. cos_sin[2i] = cos(theta_i), cos_sin[2i+1] = sin(theta_i) for
// i < n_rot/2 (scaling already applied). REQUIRES: n_rot even, <= head_dim.
void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
          RopeStyle style, const float* cos_sin);

// In place over n values: x = exp(x - max) / sum(exp(x - max)).
void Softmax(float* x, int64_t n);

// y[i] = silu(x[i]) * (mul ? mul[i] : 1); y may alias x or mul.
void Silu(const float* x, const float* mul, float* y, int64_t n);
// y[i] = gelu_tanh(x[i]) * (mul ? mul[i] : 1); y may alias x or mul.
void Gelu(const float* x, const float* mul, float* y, int64_t n);

// Element type of cached keys / values.
enum class KvType { kF32, kF16 };

// Attention over a long context is computed in slices of key positions:
// slice k holds positions [k * kAttentionSlice, (k + 1) * kAttentionSlice).
// Each slice gives a partial (m = its highest score, l = sum of exp(s - m),
// o = sum of exp(s - m) * v), and the partials are merged in slice order
// (MergeSlices). Slices are fixed by position, never by the thread count or
// the batch, so a query's result depends only on its own keys.
inline constexpr int64_t kAttentionSlice = 256;

// A partial's floats: m, l, then o [hdv].
inline int64_t SlicePartialFloats(int64_t hdv) { return hdv + 2; }

// One query row's softmax over its n >= 1 raw scores of one slice, in
// place: softcap (when > 0: s = softcap * tanh(s / softcap)), *m = max,
// s = exp(s - *m). Returns l = their sum.
float SliceSoftmax(const KernelTable& t, float* s, int64_t n, float softcap,
                   float* m);

// out [hdv] = (sum_k w_k o_k) / (sum_k w_k l_k + exp(sink - M)),
// w_k = exp(m_k - M), M = max(max m_k, sink), over the n partials part + k *
// stride (SlicePartialFloats layout) whose l_k > 0, in order k = 0 .. n-1.
// `sink`: an attention sink's logit (gpt-oss), an extra softmax term with
// no value; -inf: none. REQUIRES: at least one has l_k > 0.
void MergeSlices(const float* part, int64_t stride, int64_t n, int64_t hdv,
                 float* out, float sink = -INFINITY);

// One query row against n_kv cached rows: out = softmax(scale * q.K^T) V,
// by slices of kAttentionSlice positions (the reference that the model's
// batched attention matches bitwise).
struct AttentionArgs {
  const float* q = nullptr;  // [head_dim]
  const void* k = nullptr;   // n_kv rows of head_dim elements of k_type
  const void* v = nullptr;   // n_kv rows of head_dim elements of v_type
  KvType k_type = KvType::kF32;
  KvType v_type = KvType::kF32;
  size_t k_row_bytes = 0;   // bytes between K rows; 0: packed
  size_t v_row_bytes = 0;   // bytes between V rows; 0: packed
  // > 0: F16 keys in tiles of k_tile rows (kernel_table.h scores_f16t): k
  // is row 0's tile (plus the head's offset, head_dim * k_tile halves per
  // head before it), row 0 its key k_lane; tile i + 1 lies k_tile *
  // k_row_bytes past tile i.
  int64_t k_tile = 0;
  int64_t k_lane = 0;
  // > 0: F16 values head-major in tiles of v_tile rows (a power of two; a
  // tile's head parts are [v_tile][head_dim] halves): v is row 0's tile
  // plus the head's offset (head_dim * v_tile halves per head before it),
  // row 0 its value v_lane; tile i + 1 lies v_tile * v_row_bytes past tile i.
  int64_t v_tile = 0;
  int64_t v_lane = 0;
  int64_t n_kv = 0;         // rows to attend to (0: out = 0)
  int64_t first_pos = 0;    // position of row 0 (where slices begin)
  int64_t head_dim = 0;     // elements per row
  float scale = 1.0f;       // applied to q.k before the softmax
  float softcap = 0.0f;     // > 0: s = softcap * tanh(s / softcap)
  float sink = -INFINITY;   // attention sink logit (MergeSlices); -inf: none
  float* scores = nullptr;  // [n_kv] caller scratch
  float* out = nullptr;     // [head_dim]
};

void Attention(const AttentionArgs& args);

// The same functions on an explicit table.
void RmsNorm(const KernelTable& t, const float* x, const float* w, int64_t n,
             float eps, float* out);
void Rope(const KernelTable& t, float* x, int64_t n_heads, int64_t head_dim,
          int64_t n_rot, RopeStyle style, const float* cos_sin);
void Softmax(const KernelTable& t, float* x, int64_t n);
void Silu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n);
void Gelu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n);
void Attention(const KernelTable& t, const AttentionArgs& args);

}  // namespace weft::kernels
