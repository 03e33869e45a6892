#include "kernels/ops.h"

#include <algorithm>
#include <cmath>

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

void Softmax(const KernelTable& t, float* x, int64_t n) { t.softmax(x, n); }

void Silu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n) {
  t.silu(x, mul, y, n);
}

void Gelu(const KernelTable& t, const float* x, const float* mul, float* y, int64_t n) {
  t.gelu(x, mul, y, n);
}

void Attention(const KernelTable& t, const AttentionArgs& a) {
  CHECK(a.q != nullptr && a.out != nullptr && a.head_dim >= 0 && a.n_kv >= 0);
  std::fill_n(a.out, a.head_dim, 0.0f);
  if (a.n_kv == 0) return;
  CHECK(a.k != nullptr && a.v != nullptr && a.scores != nullptr);
  const size_t k_el = a.k_type == KvType::kF32 ? 4 : 2;
  const size_t v_el = a.v_type == KvType::kF32 ? 4 : 2;
  const size_t k_stride = a.k_row_bytes != 0 ? a.k_row_bytes : k_el * a.head_dim;
  const size_t v_stride = a.v_row_bytes != 0 ? a.v_row_bytes : v_el * a.head_dim;
  const char* k = static_cast<const char*>(a.k);
  const char* v = static_cast<const char*>(a.v);
  // Scores: [n_kv].
  for (int64_t j = 0; j < a.n_kv; ++j) {
    const void* row = k + j * k_stride;
    const float s = a.k_type == KvType::kF32
                        ? t.dot_f32(a.q, static_cast<const float*>(row), a.head_dim)
                        : t.dot_f16(a.q, static_cast<const uint16_t*>(row), a.head_dim);
    a.scores[j] = s * a.scale;
  }
  if (a.softcap > 0) {
    for (int64_t j = 0; j < a.n_kv; ++j) {
      a.scores[j] = a.softcap * std::tanh(a.scores[j] / a.softcap);
    }
  }
  t.softmax(a.scores, a.n_kv);
  // Weighted sum of V rows: [head_dim].
  for (int64_t j = 0; j < a.n_kv; ++j) {
    const void* row = v + j * v_stride;
    if (a.v_type == KvType::kF32) {
      t.axpy_f32(a.scores[j], static_cast<const float*>(row), a.out, a.head_dim);
    } else {
      t.axpy_f16(a.scores[j], static_cast<const uint16_t*>(row), a.out, a.head_dim);
    }
  }
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
