#include "model/moe.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "model/ops.h"
#include "util/check.h"

namespace weft::model {

namespace {

// Indices of the k largest of v[n] (largest first, the lower index on
// ties) into top[k].
void TopK(const float* v, int64_t n, int64_t k, int32_t* top) {
  bool taken[4096] = {};
  CHECK_LE(n, 4096);
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t e = 0; e < n; ++e) {
      if (!taken[e] && (best < 0 || v[e] > v[best])) best = e;
    }
    taken[best] = true;
    top[j] = static_cast<int32_t>(best);
  }
}

}  // namespace

void RouteToken(const ModelConfig& c, const float* logits, int32_t* experts,
                float* weights) {
  const int64_t n = c.n_expert, k = c.n_expert_used;
  if (c.moe_softmax_topk) {
    // Top k of the logits, then the softmax of those k.
    TopK(logits, n, k, experts);
    float max = logits[experts[0]], sum = 0;
    for (int64_t j = 0; j < k; ++j) {
      weights[j] = std::exp(logits[experts[j]] - max);
      sum += weights[j];
    }
    for (int64_t j = 0; j < k; ++j) weights[j] /= sum;
    return;
  }
  // Softmax over all experts (ggml_soft_max: max-shifted, float).
  float max = logits[0];
  for (int64_t e = 1; e < n; ++e) max = std::max(max, logits[e]);
  float probs[4096];
  CHECK_LE(n, 4096);
  float sum = 0;
  for (int64_t e = 0; e < n; ++e) {
    probs[e] = std::exp(logits[e] - max);
    sum += probs[e];
  }
  for (int64_t e = 0; e < n; ++e) probs[e] /= sum;
  TopK(probs, n, k, experts);
  for (int64_t j = 0; j < k; ++j) weights[j] = probs[experts[j]];
  if (c.moe_norm_weights) {
    float total = 0;
    for (int64_t j = 0; j < k; ++j) total += weights[j];
    total = std::max(total, 6.103515625e-5f);
    for (int64_t j = 0; j < k; ++j) weights[j] /= total;
  }
}

void PlanExperts(const int32_t* experts, int64_t T, int64_t k, int64_t n_expert,
                 ExpertPlan* plan) {
  plan->count.assign(static_cast<size_t>(n_expert), 0);
  plan->offset.assign(static_cast<size_t>(n_expert + 1), 0);
  plan->row_of.resize(static_cast<size_t>(T * k));
  for (int64_t i = 0; i < T * k; ++i) {
    CHECK(experts[i] >= 0 && experts[i] < n_expert) << experts[i];
    ++plan->count[static_cast<size_t>(experts[i])];
  }
  for (int64_t e = 0; e < n_expert; ++e) {
    plan->offset[static_cast<size_t>(e + 1)] =
        plan->offset[static_cast<size_t>(e)] +
        plan->count[static_cast<size_t>(e)];
  }
  std::vector<int64_t> next(plan->offset.begin(), plan->offset.end() - 1);
  for (int64_t i = 0; i < T * k; ++i) {
    plan->row_of[static_cast<size_t>(i)] =
        next[static_cast<size_t>(experts[i])]++;
  }
}

void GatherRows(const float* src, const ExpertPlan& plan, int64_t T, int64_t k,
                int64_t width, float* dst) {
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t j = 0; j < k; ++j) {
      const int64_t row = plan.row_of[static_cast<size_t>(t * k + j)];
      std::memcpy(dst + row * width, src + t * width,
                  static_cast<size_t>(width) * sizeof(float));
    }
  }
}

void ScatterRows(const float* y, const ExpertPlan& plan, const float* weights,
                 int64_t T, int64_t k, int64_t width, float* out) {
  for (int64_t t = 0; t < T; ++t) {
    float* o = out + t * width;
    for (int64_t j = 0; j < k; ++j) {
      const float w = weights[t * k + j];
      const float* r = y + plan.row_of[static_cast<size_t>(t * k + j)] * width;
      if (j == 0) {
        for (int64_t i = 0; i < width; ++i) o[i] = w * r[i];
      } else {
        for (int64_t i = 0; i < width; ++i) o[i] += w * r[i];
      }
    }
  }
}

void SwigluOai(const float* gate, const float* up, float* out, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float x = std::min(gate[i], kLimit);
    const float y = std::clamp(up[i], -kLimit, kLimit);
    out[i] = x / (1.0f + std::exp(kAlpha * (-x))) * (y + 1.0f);
  }
}

namespace {

// rows [r0, r0 + m) of y ([rows, n]) += bias[e * n ...] (no-op when empty).
void AddExpertBias(const WeightVector& bias, size_t e, int64_t n, int64_t r0,
                   int64_t m, float* y) {
  if (bias.empty()) return;
  const float* b = bias.data() + e * static_cast<size_t>(n);
  for (int64_t r = r0; r < r0 + m; ++r) {
    for (int64_t i = 0; i < n; ++i) y[r * n + i] += b[i];
  }
}

void Grow(std::vector<float>* v, int64_t n) {
  if (static_cast<int64_t>(v->size()) < n) v->resize(static_cast<size_t>(n));
}

// One product y[m, :] = x[m, :] W^T.
struct ExpertProduct {
  const WeightMatrix* w;
  const float* x;
  float* y;
  int64_t m;
};

// Runs `ps` in as few parallel regions as kernels::MatMulMany allows (the
// products with the same x share its conversion); types the kernels lack
// (or float_activations) go through the reference ops.h MatMul.
void RunProducts(const MoeContext& mc, const std::vector<ExpertProduct>& ps) {
  kernels::MatMulArgs args[kernels::kMaxMatMulGroup];
  int n = 0;
  auto flush = [&] {
    if (n > 0) kernels::MatMulMany(*mc.kt, args, n);
    n = 0;
  };
  for (const ExpertProduct& p : ps) {
    const WeightMatrix& w = *p.w;
    if (p.m == 0) continue;
    if (!kernels::MatMulSupports(w.type) ||
        (mc.float_activations && w.type != GgmlType::kF32)) {
      MatMul(w, p.x, p.m, p.y, 1);
      continue;
    }
    args[n++] = MatMulArgsFor(w, p.x, p.y, p.m, mc.pool, mc.matmul);
    if (n == kernels::kMaxMatMulGroup) flush();
  }
  flush();
}

}  // namespace

void MoeFfn(const MoeContext& mc, const ModelConfig& c,
            const MoeLayerWeights& w, const float* xn, int64_t T, MoeScratch* s,
            float* out) {
  const int64_t E = c.n_embd, F = c.n_ff_exp, n_exp = c.n_expert,
                k = c.n_expert_used;
  const int64_t rows = T * k;
  Grow(&s->logits, T * n_exp);
  s->experts.resize(static_cast<size_t>(rows));
  Grow(&s->weights, rows);
  Grow(&s->x, rows * E);
  Grow(&s->gate, rows * F);
  Grow(&s->up, rows * F);
  Grow(&s->down, rows * E);

  // 1. Route every token: [T, n_expert] logits, then its top k.
  // A small router product (decode) runs inline: a fork-join costs more
  // than its few dots (results are the same with or without the pool).
  MoeContext router_mc = mc;
  if (T * n_exp * E < (int64_t{1} << 18)) router_mc.pool = nullptr;
  RunProducts(router_mc, {ExpertProduct{&w.router, xn, s->logits.data(), T}});
  for (int64_t t = 0; t < T; ++t) {
    for (size_t e = 0; e < w.router_bias.size(); ++e) {
      s->logits[static_cast<size_t>(t * n_exp) + e] += w.router_bias[e];
    }
    RouteToken(c, s->logits.data() + t * n_exp, s->experts.data() + t * k,
               s->weights.data() + t * k);
  }
  // 2. Group the pairs by expert and gather their inputs.
  PlanExperts(s->experts.data(), T, k, n_exp, &s->plan);
  GatherRows(xn, s->plan, T, k, E, s->x.data());
  // 3. Each chosen expert once over its rows: gate and up (sharing the
  // conversion of its rows), then the activation row by row, then down.
  std::vector<ExpertProduct> ps;
  ps.reserve(static_cast<size_t>(2 * n_exp));
  // fn(e, first row, rows) for every expert with rows.
  auto for_each_expert = [&](auto&& fn) {
    for (int64_t e = 0; e < n_exp; ++e) {
      const size_t i = static_cast<size_t>(e);
      if (s->plan.count[i] > 0) fn(i, s->plan.offset[i], s->plan.count[i]);
    }
  };
  for_each_expert([&](size_t e, int64_t r0, int64_t m) {
    ps.push_back(
        {&w.gate[e], s->x.data() + r0 * E, s->gate.data() + r0 * F, m});
    ps.push_back({&w.up[e], s->x.data() + r0 * E, s->up.data() + r0 * F, m});
  });
  RunProducts(mc, ps);
  for_each_expert([&](size_t e, int64_t r0, int64_t m) {
    AddExpertBias(w.gate_bias, e, F, r0, m, s->gate.data());
    AddExpertBias(w.up_bias, e, F, r0, m, s->up.data());
  });
  for (int64_t r = 0; r < rows; ++r) {
    float* g = s->gate.data() + r * F;
    if (c.moe_swiglu_oai) {
      SwigluOai(g, s->up.data() + r * F, g, F);
    } else {
      mc.kt->silu(g, s->up.data() + r * F, g, F);
    }
  }
  ps.clear();
  for_each_expert([&](size_t e, int64_t r0, int64_t m) {
    ps.push_back(
        {&w.down[e], s->gate.data() + r0 * F, s->down.data() + r0 * E, m});
  });
  RunProducts(mc, ps);
  for_each_expert([&](size_t e, int64_t r0, int64_t m) {
    AddExpertBias(w.down_bias, e, E, r0, m, s->down.data());
  });
  // 4. Back to the tokens, weighted, in each token's top-k order.
  ScatterRows(s->down.data(), s->plan, s->weights.data(), T, k, E, out);
}

}  // namespace weft::model
