// The mixture-of-experts pieces (model/moe.h): routing, the expert grouping
// with its gather/scatter on odd shapes, and MoeFfn against a per-token
// reference built from the reference ops (model/ops.h) on every ISA.
#include "model/moe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "kernels/isa.h"
#include "model/ops.h"
#include "tests/model/synthetic.h"

namespace weft::model {
namespace {

ModelConfig MoeConfig(int64_t n_expert, int64_t k, bool norm) {
  ModelConfig c;
  c.n_expert = n_expert;
  c.n_expert_used = k;
  c.moe_norm_weights = norm;
  return c;
}

TEST(MoeTest, RouteTokenPicksTopKAndRenormalises) {
  const float logits[5] = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f};
  int32_t e[3];
  float w[3];
  RouteToken(MoeConfig(5, 3, false), logits, e, w);
  // Largest first; of the tied 2.0s the lower index first.
  EXPECT_EQ(e[0], 1);
  EXPECT_EQ(e[1], 3);
  EXPECT_EQ(e[2], 4);
  double z = 0;
  for (float l : logits) z += std::exp(l);
  EXPECT_NEAR(w[0], std::exp(2.0) / z, 1e-6);
  EXPECT_NEAR(w[2], std::exp(1.0) / z, 1e-6);
  RouteToken(MoeConfig(5, 3, true), logits, e, w);
  const double sum = 2 * std::exp(2.0) + std::exp(1.0);
  EXPECT_NEAR(w[0], std::exp(2.0) / sum, 1e-6);
  EXPECT_NEAR(w[1], std::exp(2.0) / sum, 1e-6);
  EXPECT_NEAR(w[2], std::exp(1.0) / sum, 1e-6);
}

// Grouping, gather and scatter against the plain per-token sum, on odd
// shapes (7 tokens, 3 of 5 experts, rows of 13 floats).
TEST(MoeTest, GatherScatterMatchPerTokenSum) {
  const int64_t T = 7, k = 3, n = 5, width = 13;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<int32_t> experts(T * k);
  std::vector<float> weights(T * k), x(T * width);
  for (int64_t t = 0; t < T; ++t) {
    // k distinct experts per token, in a shuffled order.
    std::vector<int32_t> all = {0, 1, 2, 3, 4};
    std::shuffle(all.begin(), all.end(), rng);
    for (int64_t j = 0; j < k; ++j) experts[t * k + j] = all[j];
  }
  for (float& v : weights) v = u(rng);
  for (float& v : x) v = u(rng);
  ExpertPlan plan;
  PlanExperts(experts.data(), T, k, n, &plan);
  // Rows are grouped by expert (ascending), each expert's in token order.
  for (int64_t e = 0; e < n; ++e) {
    int64_t expect = plan.offset[e];
    for (int64_t i = 0; i < T * k; ++i) {
      if (experts[i] == e) {
        EXPECT_EQ(plan.row_of[i], expect++);
      }
    }
    EXPECT_EQ(expect, plan.offset[e + 1]);
  }
  std::vector<float> rows(T * k * width);
  GatherRows(x.data(), plan, T, k, width, rows.data());
  // An "expert" that scales its input by (e + 1).
  for (int64_t i = 0; i < T * k; ++i) {
    const int64_t r = plan.row_of[i];
    for (int64_t c = 0; c < width; ++c)
      rows[r * width + c] *= static_cast<float>(experts[i] + 1);
  }
  std::vector<float> out(T * width, 99.0f);
  ScatterRows(rows.data(), plan, weights.data(), T, k, width, out.data());
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t c = 0; c < width; ++c) {
      float want = 0;
      for (int64_t j = 0; j < k; ++j) {
        want += weights[t * k + j] *
                static_cast<float>(experts[t * k + j] + 1) * x[t * width + c];
      }
      EXPECT_NEAR(out[t * width + c], want, 1e-5f) << t << "," << c;
    }
  }
}

// MoeFfn on a synthetic qwen3moe layer against each token computed alone
// with the reference ops: route, then sum_j w_j * down(silu(gate x) * up x).
void CheckMoeFfn(GgmlType type, float tolerance) {
  testing::SyntheticSpec s;
  s.arch = "qwen3moe";
  s.n_embd = 64;
  s.n_ff = 96;
  s.n_expert = 5;
  s.n_expert_used = 3;
  s.n_layer = 1;
  s.type = type;
  auto m = testing::LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->model->config();
  const MoeLayerWeights& w = m->model->weights().layers[0].moe;
  // The expert slices are x8-repacked where the format has the layout.
  for (const auto* experts : {&w.gate, &w.up, &w.down}) {
    for (const WeightMatrix& e : *experts) EXPECT_EQ(e.x8 != nullptr, type != GgmlType::kF32);
  }
  const int64_t T = 7, E = c.n_embd, F = c.n_ff_exp, k = c.n_expert_used;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(T * E);
  for (float& v : x) v = u(rng);
  // The reference: per token, float dots over decoded rows.
  std::vector<float> want(T * E, 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    std::vector<float> logits(c.n_expert), g(F), up(F), d(E);
    MatMul(w.router, x.data() + t * E, 1, logits.data(), 1);
    std::vector<int32_t> e(k);
    std::vector<float> wt(k);
    RouteToken(c, logits.data(), e.data(), wt.data());
    for (int64_t j = 0; j < k; ++j) {
      MatMul(w.gate[e[j]], x.data() + t * E, 1, g.data(), 1);
      MatMul(w.up[e[j]], x.data() + t * E, 1, up.data(), 1);
      GatedActivation(FfnActivation::kSilu, g.data(), up.data(), F);
      MatMul(w.down[e[j]], g.data(), 1, d.data(), 1);
      for (int64_t i = 0; i < E; ++i) want[t * E + i] += wt[j] * d[i];
    }
  }
  kernels::ThreadPoolOptions po;
  po.num_threads = 2;
  kernels::ThreadPool pool(po);
  for (kernels::Isa isa : kernels::SupportedIsas()) {
    SCOPED_TRACE(kernels::GetKernels(isa).name);
    kernels::MatMulScratch ms;
    MoeContext mc{&kernels::GetKernels(isa), &pool, &ms, false};
    MoeScratch scratch;
    std::vector<float> got(T * E);
    MoeFfn(mc, c, w, x.data(), T, &scratch, got.data());
    float max_diff = 0;
    for (int64_t i = 0; i < T * E; ++i)
      max_diff = std::max(max_diff, std::fabs(got[i] - want[i]));
    EXPECT_LE(max_diff, tolerance);
    // One token alone gives bitwise its row of the batch.
    std::vector<float> alone(E);
    MoeFfn(mc, c, w, x.data() + 3 * E, 1, &scratch, alone.data());
    EXPECT_EQ(std::memcmp(alone.data(), got.data() + 3 * E, E * sizeof(float)),
              0);
  }
}

TEST(MoeTest, MoeFfnMatchesPerTokenReferenceF32) {
  CheckMoeFfn(GgmlType::kF32, 1e-5f);
}
// Q8_0 (x8-repacked experts): int8 activations, a few 1e-3 of error.
TEST(MoeTest, MoeFfnMatchesPerTokenReferenceQ8) {
  CheckMoeFfn(GgmlType::kQ8_0, 2e-2f);
}
// MXFP4 experts (gpt-oss's; x8-repacked slices) against the same decoded
// weights: int8 activations only.
TEST(MoeTest, MoeFfnMatchesPerTokenReferenceMXFP4) {
  CheckMoeFfn(GgmlType::kMXFP4, 2e-2f);
}

}  // namespace
}  // namespace weft::model
