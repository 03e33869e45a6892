// The mixture-of-experts FFN (qwen3moe, gpt-oss): a router picks n_expert_used
// of n_expert expert FFNs per token and mixes their outputs with its weights.
//
// Done the CPU way (llama.cpp's build_moe_ffn, computed grouped): per pass,
// the batch's (token, expert) pairs are grouped by expert, each chosen expert
// runs once over its tokens (gather the rows, one matmul per weight, on the
// kernels and the pool: all experts' products in one parallel region), and
// the results are scattered back, weighted, to their tokens. A weight is
// read once per pass however many tokens chose it.
//
// Batch invariance: routing is per token; within an expert's product a
// row's result does not depend on the other rows (kernels/matmul.h); a
// token's k expert outputs are summed in its top-k order. So a token's
// output is bitwise the same alone and in any batch.
//
// Thread safety: MoeFfn uses `scratch` and the context's pool; one call at
// a time per scratch. The routing helpers are pure functions.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/config.h"
#include "model/weights.h"

namespace weft::model {

// Routes one token: from its router logits [n_expert] picks the top k
// experts (largest first; ties to the lower index) into experts[k] and
// their mixing weights into weights[k]: softmax over all experts, then the
// chosen probabilities, renormalised to sum 1 when c.moe_norm_weights (the
// sum clamped below at 2^-14, as llama.cpp); with c.moe_softmax_topk
// (gpt-oss) the top k logits and the softmax of those k.
void RouteToken(const ModelConfig& c, const float* logits, int32_t* experts,
                float* weights);

// gpt-oss's clamped SwiGLU (ggml's swiglu_oai, alpha 1.702, limit 7):
// out = min(g, 7) * sigmoid(1.702 min(g, 7)) * (clamp(u, -7, 7) + 1).
// out may alias gate.
void SwigluOai(const float* gate, const float* up, float* out, int64_t n);

// Where each (token, slot) pair's row goes when the pairs are grouped by
// expert: experts ascending, each expert's rows in token order.
struct ExpertPlan {
  std::vector<int32_t> count;   // [n_expert] rows per expert
  std::vector<int64_t> offset;  // [n_expert + 1] first row of each expert
  std::vector<int64_t> row_of;  // [T * k] row of pair (t, j)
};
// Plans T tokens' pairs (experts: [T, k]).
void PlanExperts(const int32_t* experts, int64_t T, int64_t k, int64_t n_expert,
                 ExpertPlan* plan);

// dst[row_of[t * k + j]] = src[t] for every pair: rows of `width` floats.
void GatherRows(const float* src, const ExpertPlan& plan, int64_t T, int64_t k,
                int64_t width, float* dst);
// out[t] = sum over j (in slot order) of weights[t * k + j] * y[row_of[t *
// k + j]]; rows of `width` floats.
void ScatterRows(const float* y, const ExpertPlan& plan, const float* weights,
                 int64_t T, int64_t k, int64_t width, float* out);

// Scratch of MoeFfn, grown on demand.
struct MoeScratch {
  std::vector<float> logits;     // [T, n_expert] router logits
  std::vector<int32_t> experts;  // [T, k] chosen experts
  std::vector<float> weights;    // [T, k] their mixing weights
  ExpertPlan plan;
  std::vector<float> x;     // [T * k, n_embd] gathered inputs
  std::vector<float> gate;  // [T * k, n_ff_exp]
  std::vector<float> up;    // [T * k, n_ff_exp]
  std::vector<float> down;  // [T * k, n_embd] expert outputs
};

struct MoeContext {
  const kernels::KernelTable* kt = nullptr;  // kernels to run on
  kernels::ThreadPool* pool = nullptr;       // null: inline
  kernels::MatMulScratch* matmul = nullptr;  // quantized activations
  // Dequantized rows and float32 dots for quantized weights (tests).
  bool float_activations = false;
};

// out[t] = MoE FFN of xn[t] for T tokens. xn: [T, n_embd] normed inputs,
// out: [T, n_embd].
void MoeFfn(const MoeContext& mc, const ModelConfig& c,
            const MoeLayerWeights& w, const float* xn, int64_t T, MoeScratch* s,
            float* out);

}  // namespace weft::model
