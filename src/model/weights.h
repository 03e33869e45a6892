// Model weights as zero-copy views into a mapped GGUF file, checked against
// the ModelConfig at load time.
//
// Thread safety: immutable after LoadWeights(); safe to share.
// Invariants: every WeightMatrix has rows * row_bytes bytes at `data`, its
// type can be dequantized, and its shape matches the config.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "model/config.h"
#include "tensor/types.h"
#include "util/status.h"

namespace weft::model {

// A [rows, cols] matrix (ggml dims {cols, rows}), row-major, each row
// `row_bytes` of encoded blocks.
struct WeightMatrix {
  std::string name;                 // tensor name, for errors
  GgmlType type = GgmlType::kF32;   // element encoding
  int64_t rows = 0;                 // output features
  int64_t cols = 0;                 // input features (the dot length)
  uint64_t row_bytes = 0;           // bytes per encoded row
  const uint8_t* data = nullptr;    // into the mapping; null = absent
  // The same rows in the x8 layout (kernels/packed_x8.h), owned by the
  // ModelWeights; null when not repacked. MatMul reads these; data stays
  // for the row decoder (embedding lookup, reference paths).
  const uint8_t* x8 = nullptr;

  bool present() const { return data != nullptr; }
  const uint8_t* row(int64_t r) const { return data + r * row_bytes; }
};

// A 1-D float32 vector (norm weights, biases). Empty when absent.
using WeightVector = std::vector<float>;

// The mixture-of-experts FFN of one layer: expert e's matrices are the e-th
// 2-D slices of the *_exps 3-D tensors (ggml dims {cols, rows, n_expert}).
struct MoeLayerWeights {
  WeightMatrix router;             // [n_expert, n_embd] ffn_gate_inp
  WeightVector router_bias;        // [n_expert] (gpt-oss)
  WeightVector gate_bias;          // [n_expert, n_ff_exp] (gpt-oss)
  WeightVector up_bias;            // [n_expert, n_ff_exp] (gpt-oss)
  WeightVector down_bias;          // [n_expert, n_embd] (gpt-oss)
  std::vector<WeightMatrix> gate;  // n_expert x [n_ff_exp, n_embd]
  std::vector<WeightMatrix> up;    // n_expert x [n_ff_exp, n_embd]
  std::vector<WeightMatrix> down;  // n_expert x [n_embd, n_ff_exp]
};

struct LayerWeights {
  WeightVector attn_norm;       // [n_embd]
  WeightMatrix wq;              // [q_dim, n_embd]
  WeightMatrix wk;              // [k_dim, n_embd]
  WeightMatrix wv;              // [v_dim, n_embd]
  WeightVector bq, bk, bv;      // [q_dim], [k_dim], [v_dim] (qwen2)
  WeightMatrix wo;              // [n_embd, n_head * head_dim_v]
  WeightVector bo;              // [n_embd] (gpt-oss)
  WeightVector sinks;           // [n_head] attention sink logits (gpt-oss)
  WeightVector q_norm, k_norm;  // [head_dim_k] (gemma3)
  WeightVector post_attn_norm;  // [n_embd] (gemma3)
  WeightVector ffn_norm;        // [n_embd]
  WeightMatrix ffn_gate;        // [n_ff, n_embd]
  WeightMatrix ffn_up;          // [n_ff, n_embd]
  WeightMatrix ffn_down;        // [n_embd, n_ff]
  WeightVector post_ffn_norm;   // [n_embd] (gemma3)
  MoeLayerWeights moe;          // experts (config.is_moe(); else empty)
};

struct ModelWeights {
  WeightMatrix token_embd;      // [n_vocab, n_embd]
  WeightMatrix output;          // [n_vocab, n_embd]; == token_embd when tied
  WeightVector output_norm;     // [n_embd]
  // [n_rot / 2] or empty: llama3's rope_freqs, or phi3's LongRoPE
  // rope_factors_long / _short (LoadWeightsOptions::long_rope picks).
  WeightVector rope_freqs;
  std::vector<LayerWeights> layers;
  // Storage of the matrices' x8 copies (RepackWeightsX8: one buffer).
  std::vector<std::shared_ptr<uint8_t>> x8_buffers;
};

// The kernels::MatMul arguments of y[m, :] = x[m, :] w^T (w's x8 copy when
// it has one). REQUIRES: kernels::MatMulSupports(w.type).
kernels::MatMulArgs MatMulArgsFor(const WeightMatrix& w, const float* x, float* y, int64_t m,
                                  kernels::ThreadPool* pool, kernels::MatMulScratch* scratch);

// Finds and checks every tensor the config needs. Errors name the tensor
// (missing, wrong shape, or a type Weft cannot dequantize). Fused tensors
// (phi3's attn_qkv and gate+up ffn_up) become row-range views (wq/wk/wv,
// ffn_gate/ffn_up) onto the one tensor, without copying. `long_rope`:
// use rope_factors_long rather than _short where a file has both.
StatusOr<ModelWeights> LoadWeights(const gguf::GgufFile& file,
                                   const ModelConfig& config, bool long_rope = false);

// Copies every matrix MatMul reads (the layers' and the output; not the
// token embedding, which is looked up by row) whose type has an x8 layout
// (Q4_0, Q5_0, Q8_0, Q4_K, Q6_K) into that layout, then releases the file's pages of
// the original (file.ReleasePages): decode reads each weight group as one
// sequential stream (see kernels/packed_x8.h). Resident memory stays about
// the file's size.
void RepackWeightsX8(const gguf::GgufFile& file, ModelWeights* w);

}  // namespace weft::model
