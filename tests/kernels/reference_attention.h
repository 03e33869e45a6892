// The independent reference the attention tests compare against: one query
// row's attention computed in double from float rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace weft::kernels::testing {

// softmax over j < n of s_j = scale * dot(q, k_j) (then softcap * tanh(s_j /
// softcap) when softcap > 0), with an attention sink's logit `sink` as an
// extra term with no value (-inf: none), applied to v: returns [hdv].
// k_j = k + j * k_stride [hd], v_j = v + j * v_stride [hdv].
inline std::vector<double> ReferenceAttention(const float* q, const float* k, int64_t k_stride,
                                              const float* v, int64_t v_stride, int64_t n,
                                              int64_t hd, int64_t hdv, double scale,
                                              double softcap, double sink = -INFINITY) {
  std::vector<double> p(static_cast<size_t>(n)), out(static_cast<size_t>(hdv), 0.0);
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    double s = 0;
    for (int64_t d = 0; d < hd; ++d) s += double{q[d]} * k[j * k_stride + d];
    s *= scale;
    if (softcap > 0) s = softcap * std::tanh(s / softcap);
    p[j] = s;
    mx = std::max(mx, s);
  }
  if (sink != -INFINITY) mx = std::max(mx, sink);
  for (double& s : p) sum += s = std::exp(s - mx);
  if (sink != -INFINITY) sum += std::exp(sink - mx);
  for (int64_t j = 0; j < n; ++j) {
    for (int64_t d = 0; d < hdv; ++d) out[d] += p[j] / sum * v[j * v_stride + d];
  }
  return out;
}

}  // namespace weft::kernels::testing
