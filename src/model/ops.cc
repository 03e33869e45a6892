#include "model/ops.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "tensor/quant.h"
#include "util/check.h"

namespace weft::model {

void ParallelFor(int64_t n, int n_threads,
                 const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  const int64_t t = std::clamp<int64_t>(n_threads, 1, n);
  if (t == 1) {
    fn(0, n);
    return;
  }
  std::vector<std::thread> workers;
  workers.reserve(static_cast<size_t>(t - 1));
  const int64_t chunk = (n + t - 1) / t;
  for (int64_t i = 1; i < t; ++i) {
    const int64_t b = i * chunk, e = std::min(n, b + chunk);
    if (b >= e) break;
    workers.emplace_back([&fn, b, e] { fn(b, e); });
  }
  fn(0, std::min(n, chunk));
  for (auto& w : workers) w.join();
}

float Dot(const float* a, const float* b, int64_t n) {
  // Eight independent partial sums let the compiler use SIMD lanes without
  // -ffast-math.
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
            ((acc[2] + acc[6]) + (acc[3] + acc[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void DecodeRow(const WeightMatrix& w, int64_t r, float* dst) {
  CHECK(r >= 0 && r < w.rows) << w.name;
  Status s = DequantizeRow(w.type, w.row(r), dst, w.cols);
  // LoadWeights checked the type and the row length.
  CHECK(s.ok()) << w.name << ": " << s.ToString();
}

void MatMul(const WeightMatrix& w, const float* x, int64_t m, float* y,
            int n_threads) {
  const int64_t n = w.rows, k = w.cols;
  // Below this many multiply-adds threads cost more than they save.
  const int threads = n * k * m < (int64_t{1} << 18) ? 1 : n_threads;
  ParallelFor(n, threads, [&](int64_t r0, int64_t r1) {
    std::vector<float> buf;
    if (w.type != GgmlType::kF32) buf.resize(static_cast<size_t>(k));
    for (int64_t r = r0; r < r1; ++r) {
      const float* row;
      if (w.type == GgmlType::kF32) {
        row = reinterpret_cast<const float*>(w.row(r));
      } else {
        DecodeRow(w, r, buf.data());
        row = buf.data();
      }
      for (int64_t t = 0; t < m; ++t) y[t * n + r] = Dot(x + t * k, row, k);
    }
  });
}

void RmsNorm(const float* x, const float* w, int64_t n, float eps, float* out) {
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i]) * x[i];
  const float scale = static_cast<float>(1.0 / std::sqrt(ss / n + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * scale * w[i];
}

void RopeTable(const RopeParams& p, int64_t n_rot, int32_t pos,
               const float* freq_factors, float* out) {
  const int64_t half = n_rot / 2;
  float low = 0, high = 0, mscale = p.attn_factor;
  const bool yarn = p.scaling == RopeScaling::kYarn;
  if (yarn) {
    auto corr_dim = [&](float n_rot_beta) {
      return static_cast<float>(n_rot) *
             std::log(static_cast<float>(p.orig_ctx) /
                      (n_rot_beta * 2.0f * static_cast<float>(M_PI))) /
             (2.0f * std::log(p.base));
    };
    low = std::max(0.0f, std::floor(corr_dim(p.beta_fast)));
    high = std::min(static_cast<float>(n_rot - 1), std::ceil(corr_dim(p.beta_slow)));
    mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
  }
  for (int64_t i = 0; i < half; ++i) {
    // theta_extrap = pos * base^(-2i/n_rot) / factor_i, in double for
    // accuracy at long positions.
    double inv = std::pow(static_cast<double>(p.base),
                          -2.0 * static_cast<double>(i) / static_cast<double>(n_rot));
    if (freq_factors != nullptr) inv /= freq_factors[i];
    const double extrap = static_cast<double>(pos) * inv;
    const double interp = extrap * p.freq_scale;
    double theta = interp;
    if (yarn) {
      const float y = (static_cast<float>(i) - low) / std::max(0.001f, high - low);
      const double ramp = 1.0 - std::clamp(y, 0.0f, 1.0f);
      theta = interp * (1.0 - ramp) + extrap * ramp;
    }
    out[2 * i] = static_cast<float>(std::cos(theta)) * mscale;
    out[2 * i + 1] = static_cast<float>(std::sin(theta)) * mscale;
  }
}

void ApplyRope(float* x, int64_t n_heads, int64_t head_dim, int64_t n_rot,
               RopeType type, const float* cs) {
  const int64_t half = n_rot / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float c = cs[2 * i], s = cs[2 * i + 1];
      float* a;
      float* b;
      if (type == RopeType::kNeox) {
        a = v + i;
        b = v + i + half;
      } else {
        a = v + 2 * i;
        b = v + 2 * i + 1;
      }
      const float x0 = *a, x1 = *b;
      *a = x0 * c - x1 * s;
      *b = x0 * s + x1 * c;
    }
  }
}

void GatedActivation(FfnActivation act, float* gate, const float* up,
                     int64_t n) {
  if (act == FfnActivation::kSilu) {
    for (int64_t i = 0; i < n; ++i) {
      const float g = gate[i];
      gate[i] = g / (1.0f + std::exp(-g)) * up[i];
    }
  } else {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    for (int64_t i = 0; i < n; ++i) {
      const float g = gate[i];
      const float t = std::tanh(kSqrt2OverPi * g * (1.0f + 0.044715f * g * g));
      gate[i] = 0.5f * g * (1.0f + t) * up[i];
    }
  }
}

void SoftCap(float* y, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) y[i] = cap * std::tanh(y[i] / cap);
}

}  // namespace weft::model
