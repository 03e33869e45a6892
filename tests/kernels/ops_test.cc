// Elementwise kernels and attention: every supported ISA against the scalar
// twin, and the scalar twin against double-precision references.
#include "kernels/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/isa.h"
#include "tensor/half.h"
#include "tests/kernels/reference_attention.h"

namespace weft::kernels {
namespace {

std::vector<float> RandomVec(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// |got - want| <= atol + rtol * |want| everywhere; reports the worst index.
void ExpectNear(const std::vector<float>& got, const std::vector<double>& want,
                double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  size_t wi = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double r = std::fabs(got[i] - want[i]) / (atol + rtol * std::fabs(want[i]));
    if (!(r <= worst)) {
      worst = std::isnan(r) ? INFINITY : r;
      wi = i;
    }
  }
  EXPECT_LE(worst, 1.0) << what << ": worst [" << wi << "] got " << got[wi] << " want "
                        << want[wi];
}

const std::vector<int64_t> kSizes = {1, 3, 8, 15, 16, 17, 64, 255, 1000};

TEST(OpsTest, RmsNorm) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t n : kSizes) {
      std::vector<float> x = RandomVec(n, 1 + n, 3.0f), w = RandomVec(n, 2 + n);
      for (bool weighted : {true, false}) {
        std::vector<float> out(n);
        RmsNorm(t, x.data(), weighted ? w.data() : nullptr, n, 1e-6f, out.data());
        double ss = 0;
        for (float v : x) ss += double{v} * v;
        const double scale = 1.0 / std::sqrt(ss / n + 1e-6);
        std::vector<double> want(n);
        for (int64_t i = 0; i < n; ++i) want[i] = x[i] * scale * (weighted ? w[i] : 1.0);
        ExpectNear(out, want, 1e-6, 1e-5, std::string(IsaName(isa)) + " rms_norm n=" + std::to_string(n));
        // In place gives the same.
        std::vector<float> inplace = x;
        RmsNorm(t, inplace.data(), weighted ? w.data() : nullptr, n, 1e-6f, inplace.data());
        EXPECT_EQ(inplace, out);
      }
    }
  }
}

TEST(OpsTest, RopeNormalAndNeox) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t head_dim : {2, 8, 64, 80, 256}) {
      for (int64_t n_rot : {head_dim, head_dim / 2 / 2 * 2}) {
        if (n_rot == 0) continue;
        for (RopeStyle style : {RopeStyle::kNormal, RopeStyle::kNeox}) {
          const int64_t n_heads = 3;
          std::vector<float> x = RandomVec(n_heads * head_dim, head_dim + n_rot);
          std::vector<float> cs(n_rot);
          for (int64_t i = 0; i < n_rot / 2; ++i) {
            const double theta = 7.0 * std::pow(10000.0, -2.0 * i / n_rot);
            cs[2 * i] = static_cast<float>(std::cos(theta));
            cs[2 * i + 1] = static_cast<float>(std::sin(theta));
          }
          std::vector<double> want(x.begin(), x.end());
          for (int64_t h = 0; h < n_heads; ++h) {
            for (int64_t i = 0; i < n_rot / 2; ++i) {
              const int64_t i0 = h * head_dim + (style == RopeStyle::kNeox ? i : 2 * i);
              const int64_t i1 = h * head_dim + (style == RopeStyle::kNeox ? i + n_rot / 2 : 2 * i + 1);
              want[i0] = double{x[i0]} * cs[2 * i] - double{x[i1]} * cs[2 * i + 1];
              want[i1] = double{x[i0]} * cs[2 * i + 1] + double{x[i1]} * cs[2 * i];
            }
          }
          Rope(t, x.data(), n_heads, head_dim, n_rot, style, cs.data());
          ExpectNear(x, want, 1e-6, 1e-6,
                     std::string(IsaName(isa)) + " rope d=" + std::to_string(head_dim) +
                         " rot=" + std::to_string(n_rot) +
                         (style == RopeStyle::kNeox ? " neox" : " normal"));
        }
      }
    }
  }
}

TEST(OpsTest, Softmax) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t n : kSizes) {
      std::vector<float> x = RandomVec(n, 5 + n, 10.0f);
      if (n > 3) x[2] = -INFINITY;  // a masked position
      std::vector<double> want(n);
      double mx = -INFINITY, sum = 0;
      for (float v : x) mx = std::max(mx, double{v});
      for (int64_t i = 0; i < n; ++i) sum += want[i] = std::exp(x[i] - mx);
      for (double& v : want) v /= sum;
      Softmax(t, x.data(), n);
      ExpectNear(x, want, 1e-7, 1e-5, std::string(IsaName(isa)) + " softmax n=" + std::to_string(n));
      if (n > 3) {
        EXPECT_EQ(x[2], 0.0f);
      }
    }
  }
}

TEST(OpsTest, SiluAndGelu) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t n : kSizes) {
      std::vector<float> x = RandomVec(n, 9 + n, 4.0f), mul = RandomVec(n, 10 + n);
      if (n > 2) x[0] = 100.0f, x[1] = -100.0f;
      for (bool gated : {false, true}) {
        std::vector<float> s(n), g(n);
        Silu(t, x.data(), gated ? mul.data() : nullptr, s.data(), n);
        Gelu(t, x.data(), gated ? mul.data() : nullptr, g.data(), n);
        std::vector<double> ws(n), wg(n);
        for (int64_t i = 0; i < n; ++i) {
          const double v = x[i], m = gated ? mul[i] : 1.0;
          ws[i] = v / (1 + std::exp(-v)) * m;
          wg[i] = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))) * m;
        }
        const std::string name = std::string(IsaName(isa)) + " n=" + std::to_string(n);
        ExpectNear(s, ws, 1e-6, 1e-5, "silu " + name);
        ExpectNear(g, wg, 1e-6, 1e-5, "gelu " + name);
      }
    }
  }
}

// With and without an attention sink (gpt-oss: an extra softmax logit with
// no value), across slice boundaries (n_kv 300).
TEST(OpsTest, AttentionF32AndF16) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t head_dim : {4, 64, 72, 256}) {
      for (int64_t n_kv : {1, 2, 17, 300}) {
        for (KvType kv : {KvType::kF32, KvType::kF16}) {
          for (auto [softcap, sink] : {std::pair{0.0f, -INFINITY}, std::pair{30.0f, -INFINITY},
                                       std::pair{0.0f, 0.5f}, std::pair{0.0f, 4.0f}}) {
            std::vector<float> q = RandomVec(head_dim, 1), k = RandomVec(n_kv * head_dim, 2),
                               v = RandomVec(n_kv * head_dim, 3);
            std::vector<uint16_t> kh(k.size()), vh(v.size());
            for (size_t i = 0; i < k.size(); ++i) {
              kh[i] = Fp32ToFp16(k[i]);
              vh[i] = Fp32ToFp16(v[i]);
              if (kv == KvType::kF16) {
                k[i] = Fp16ToFp32(kh[i]);
                v[i] = Fp16ToFp32(vh[i]);
              }
            }
            const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
            const std::vector<double> want =
                testing::ReferenceAttention(q.data(), k.data(), head_dim, v.data(), head_dim,
                                            n_kv, head_dim, head_dim, scale, softcap, sink);
            std::vector<float> out(head_dim), scores(n_kv);
            AttentionArgs a;
            a.q = q.data();
            a.k = kv == KvType::kF32 ? static_cast<const void*>(k.data()) : kh.data();
            a.v = kv == KvType::kF32 ? static_cast<const void*>(v.data()) : vh.data();
            a.k_type = a.v_type = kv;
            a.n_kv = n_kv;
            a.head_dim = head_dim;
            a.scale = scale;
            a.softcap = softcap;
            a.sink = sink;
            a.scores = scores.data();
            a.out = out.data();
            Attention(t, a);
            ExpectNear(out, want, 1e-5, 1e-4,
                       std::string(IsaName(isa)) + " attention d=" + std::to_string(head_dim) +
                           " n_kv=" + std::to_string(n_kv));
          }
        }
      }
    }
  }
}

// F16 values stored in tiles (AttentionArgs::v_tile), head 1 of 2,
// starting mid-tile: bitwise the same as the same halves in rows. F16 keys
// in tiles (k_tile) give the rows' result within rounding (the tile score
// kernel adds in another order). Tile t's slots hold [head][e][lane] keys
// and [head][lane][e] values; a slot is one row of both heads.
TEST(OpsTest, AttentionTiledF16MatchesRows) {
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (int64_t w : {1, 4, 16}) {
      for (int64_t head_dim : {8, 72}) {
        for (int64_t lane0 : {int64_t{0}, w - 1}) {
          const int64_t n_kv = 300, row = 2 * head_dim, slots = (lane0 + n_kv + w - 1) / w * w;
          std::vector<float> q = RandomVec(head_dim, 4);
          std::vector<float> k = RandomVec(n_kv * head_dim, 5), v = RandomVec(n_kv * head_dim, 6);
          std::vector<uint16_t> kh(k.size()), vh(v.size());
          std::vector<uint16_t> kt(static_cast<size_t>(slots * row)), vt(kt.size());
          for (int64_t j = 0; j < n_kv; ++j) {
            const int64_t at = lane0 + j, base = at / w * w * row, lane = at % w;
            for (int64_t e = 0; e < head_dim; ++e) {
              kh[j * head_dim + e] = Fp32ToFp16(k[j * head_dim + e]);
              vh[j * head_dim + e] = Fp32ToFp16(v[j * head_dim + e]);
              kt[base + (head_dim + e) * w + lane] = kh[j * head_dim + e];
              vt[base + (w + lane) * head_dim + e] = vh[j * head_dim + e];
            }
          }
          const std::string what = std::string(IsaName(isa)) + " w " + std::to_string(w) +
                                   " d " + std::to_string(head_dim) + " lane " +
                                   std::to_string(lane0);
          std::vector<float> rows(head_dim), tiled_k(head_dim), tiled(head_dim), scores(n_kv);
          AttentionArgs a;
          a.q = q.data();
          a.k = kh.data();
          a.v = vh.data();
          a.k_type = a.v_type = KvType::kF16;
          a.n_kv = n_kv;
          a.first_pos = 7;
          a.head_dim = head_dim;
          a.scale = 0.125f;
          a.scores = scores.data();
          a.out = rows.data();
          Attention(t, a);
          // Tiled keys, value rows.
          a.k = kt.data() + head_dim * w;
          a.k_row_bytes = static_cast<size_t>(row) * 2;
          a.k_tile = w;
          a.k_lane = lane0;
          a.out = tiled_k.data();
          Attention(t, a);
          ExpectNear(tiled_k, std::vector<double>(rows.begin(), rows.end()), 1e-5, 1e-4, what);
          // Both tiled.
          a.v = vt.data() + head_dim * w;
          a.v_row_bytes = static_cast<size_t>(row) * 2;
          a.v_tile = w;
          a.v_lane = lane0;
          a.out = tiled.data();
          Attention(t, a);
          ASSERT_EQ(0, std::memcmp(tiled_k.data(), tiled.data(), tiled.size() * sizeof(float)))
              << what;
        }
      }
    }
  }
}

TEST(IsaTest, NamesSupportAndSwitching) {
  Isa parsed;
  EXPECT_TRUE(ParseIsa("avx2", &parsed));
  EXPECT_EQ(parsed, Isa::kAvx2);
  EXPECT_FALSE(ParseIsa("sse9", &parsed));
  EXPECT_TRUE(IsaSupported(Isa::kScalar));
  EXPECT_EQ(SupportedIsas().front(), Isa::kScalar);
  EXPECT_EQ(SupportedIsas().back(), BestIsa());
  EXPECT_EQ(ActiveIsa(), BestIsa());
  SetIsa(Isa::kScalar);
  EXPECT_EQ(ActiveIsa(), Isa::kScalar);
  EXPECT_STREQ(Kernels().name, "scalar");
  SetIsa(BestIsa());
  EXPECT_STREQ(Kernels().name, std::string(IsaName(BestIsa())).c_str());
  // Every table is complete.
  for (Isa isa : SupportedIsas()) {
    const KernelTable& t = GetKernels(isa);
    for (const MatMulKernel& m : t.matmul) {
      EXPECT_TRUE(m.dot != nullptr || m.tile != nullptr);
      EXPECT_EQ(m.quantize == nullptr, m.act == ActFormat::kF32);
    }
    EXPECT_NE(t.rms_norm, nullptr);
    EXPECT_NE(t.read_bytes, nullptr);
  }
}

}  // namespace
}  // namespace weft::kernels
