#include "kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/isa.h"
#include "util/check.h"

namespace weft::kernels {

void RmsNorm(const KernelTable& t, const float* x, const float* w, int64_t n,
             float eps, float* out) {
  if (n <= 0) return;
  t.rms_norm(x, w, n, eps, out);
}

void Rope(const KernelTable& t, float* x, int64_t n_heads, int64_t head_dim,
          int64_t n_rot, RopeStyle style, const float* cos_sin) {
  CHECK(n_rot % 2 == 0 && n_rot <= head_dim && n_rot >= 0) << n_rot << " " << head_dim;
  t.rope(x, n_heads, head_dim, n_rot, style == RopeStyle::kNeox, cos_sin);
}

// exp_sum, then one scale: every ISA's softmax is its exp_sum's.
void Softmax(const KernelTable& t, float* x, int64_t n) {
  if (n <= 0) return;
  float max;
  const float inv = 1.0f / t.exp_sum(x, n, &max);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void Silu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n) {
  t.silu(x, mul, y, n);
}

void Gelu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n) {
  t.gelu(x, mul, y, n);
}

float SliceSoftmax(const KernelTable& t, float* s, int64_t n, float softcap,
                   float* m) {
  if (softcap > 0) {
    for (int64_t j = 0; j < n; ++j) s[j] = softcap * std::tanh(s[j] / softcap);
  }
  return t.exp_sum(s, n, m);
}

void MergeSlices(const float* part, int64_t stride, int64_t n, int64_t hdv,
                 float* out, float sink) {
  float mx = sink;
  for (int64_t k = 0; k < n; ++k) {
    if (part[k * stride + 1] > 0) mx = std::max(mx, part[k * stride]);
  }
  std::fill_n(out, hdv, 0.0f);
  float l = 0;
  for (int64_t k = 0; k < n; ++k) {
    const float* p = part + k * stride;
    if (!(p[1] > 0)) continue;
    const float w = std::exp(p[0] - mx);
    l += w * p[1];
    for (int64_t i = 0; i < hdv; ++i) out[i] += w * p[2 + i];
  }
  if (sink != -INFINITY) l += std::exp(sink - mx);
  const float inv = 1.0f / l;
  for (int64_t i = 0; i < hdv; ++i) out[i] *= inv;
}

void Attention(const KernelTable& t, const AttentionArgs& a) {
  CHECK(a.q != nullptr && a.out != nullptr && a.head_dim >= 0 && a.n_kv >= 0 &&
        a.first_pos >= 0);
  std::fill_n(a.out, a.head_dim, 0.0f);
  if (a.n_kv == 0) return;
  CHECK(a.k != nullptr && a.v != nullptr && a.scores != nullptr);
  CHECK(a.k_tile == 0 || (a.k_type == KvType::kF16 && a.k_tile <= 16 && a.k_lane >= 0 &&
                          a.k_lane < a.k_tile));
  CHECK(a.v_tile == 0 || (a.v_type == KvType::kF16 && a.v_tile <= 16 &&
                          (a.v_tile & (a.v_tile - 1)) == 0 && a.v_lane >= 0 &&
                          a.v_lane < a.v_tile));
  const size_t k_el = a.k_type == KvType::kF32 ? 4 : 2;
  const size_t v_el = a.v_type == KvType::kF32 ? 4 : 2;
  const size_t k_stride =
      a.k_row_bytes != 0 ? a.k_row_bytes : k_el * a.head_dim;
  const size_t v_stride =
      a.v_row_bytes != 0 ? a.v_row_bytes : v_el * a.head_dim;
  const char* k = static_cast<const char*>(a.k);
  const char* v = static_cast<const char*>(a.v);
  const int64_t stride = SlicePartialFloats(a.head_dim);
  const int64_t first_slice = a.first_pos / kAttentionSlice;
  const int64_t n_slices =
      (a.first_pos + a.n_kv - 1) / kAttentionSlice - first_slice + 1;
  std::vector<float> part(static_cast<size_t>(n_slices * stride), 0.0f);
  std::vector<const void*> rows(static_cast<size_t>(kAttentionSlice));
  for (int64_t sl = 0; sl < n_slices; ++sl) {
    // Rows [j0, j1) of this slice.
    const int64_t j0 = std::max<int64_t>(
        0, (first_slice + sl) * kAttentionSlice - a.first_pos);
    const int64_t j1 = std::min(
        a.n_kv, (first_slice + sl + 1) * kAttentionSlice - a.first_pos);
    float* s = a.scores + j0;
    float* p = part.data() + sl * stride;
    if (a.k_tile > 0) {
      for (int64_t j = j0; j < j1;) {
        const int64_t at = a.k_lane + j, lane = at % a.k_tile;
        const int64_t np = std::min(a.k_tile - lane, j1 - j);
        const char* tile = k + at / a.k_tile * a.k_tile * static_cast<int64_t>(k_stride);
        t.scores_f16t(a.q, 0, 1, reinterpret_cast<const uint16_t*>(tile) + lane, a.k_tile, np,
                      a.head_dim, a.scale, a.scores + j, 0, nullptr);
        j += np;
      }
    } else {
      for (int64_t j = j0; j < j1; ++j) rows[j - j0] = k + j * k_stride;
      (a.k_type == KvType::kF32 ? t.scores_f32 : t.scores_f16)(
          a.q, 0, 1, rows.data(), nullptr, j1 - j0, a.head_dim, a.scale, s, 0);
    }
    p[1] = SliceSoftmax(t, s, j1 - j0, a.softcap, &p[0]);
    for (int64_t j = j0; j < j1; ++j) {
      if (a.v_tile > 0) {
        const int64_t at = a.v_lane + j, lane = at % a.v_tile;
        rows[j - j0] = v + at / a.v_tile * a.v_tile * static_cast<int64_t>(v_stride) +
                       lane * a.head_dim * static_cast<int64_t>(v_el);
      } else {
        rows[j - j0] = v + j * v_stride;
      }
    }
    (a.v_type == KvType::kF32 ? t.wsum_f32 : t.wsum_f16)(
        rows.data(), nullptr, j1 - j0, s, 0, 1, a.head_dim, p + 2, 0);
  }
  MergeSlices(part.data(), stride, n_slices, a.head_dim, a.out, a.sink);
}

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  RmsNorm(Kernels(), x, w, n, eps, out);
}
void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
          RopeStyle style, const float* cos_sin) {
  Rope(Kernels(), x, n_heads, head_dim, n_rot, style, cos_sin);
}
void Softmax(float* x, int64_t n) { Softmax(Kernels(), x, n); }
void Silu(const float* x, const float* mul, float* y, int64_t n) {
  Silu(Kernels(), x, mul, y, n);
}
void Gelu(const float* x, const float* mul, float* y, int64_t n) {
  Gelu(Kernels(), x, mul, y, n);
}
void Attention(const AttentionArgs& args) { Attention(Kernels(), args); }

}  // namespace weft::kernels
