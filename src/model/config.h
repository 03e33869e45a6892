// ModelConfig: the hyper-parameters of a decoder-only transformer, read from
// GGUF metadata the way llama.cpp reads them, for the architectures Weft
// runs: `llama` (Llama 2/3, Mistral, TinyLlama, SmolLM), `qwen2`, `gemma3`,
// the mixture-of-experts `qwen3moe` and `gpt-oss`, and `qwen3`, `gemma2` and
// `phi3` (config_archs.cc: the newer dense families).
//
// Thread safety: a value; no shared state.
// Invariants (after ModelConfigFromGguf succeeds): every size is > 0,
// n_head % n_head_kv == 0, n_rot is even and <= head_dim_k.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.h"
#include "util/status.h"

namespace weft::model {

enum class Arch { kLlama, kQwen2, kGemma3, kQwen3Moe, kQwen3, kGemma2, kPhi3, kGptOss };

// How RoPE pairs the dimensions of a head.
enum class RopeType {
  kNorm,  // adjacent pairs (x[2i], x[2i+1]) — llama.cpp LLAMA_ROPE_TYPE_NORM
  kNeox,  // halves (x[i], x[i + n_rot/2]) — LLAMA_ROPE_TYPE_NEOX
};

enum class RopeScaling { kNone, kLinear, kYarn };

enum class FfnActivation {
  kSilu,      // SwiGLU: silu(gate) * up
  kGeluTanh,  // GeGLU with the tanh approximation of GELU
};

// RoPE settings of one layer (ggml's rope_ext parameters).
struct RopeParams {
  float base = 10000.0f;                    // theta base
  float freq_scale = 1.0f;                  // 1 / scaling factor
  RopeScaling scaling = RopeScaling::kNone; // kind of context extension
  int64_t orig_ctx = 0;                     // YaRN: original context length
  float beta_fast = 32.0f;                  // YaRN ramp start
  float beta_slow = 1.0f;                   // YaRN ramp end
  float attn_factor = 1.0f;                 // multiplies cos/sin (rope.scaling.attn_factor)
};

struct ModelConfig {
  Arch arch = Arch::kLlama;     // architecture
  std::string arch_name;        // general.architecture as written

  int64_t n_vocab = 0;          // rows of token_embd.weight
  int64_t n_embd = 0;           // hidden size
  int64_t n_layer = 0;          // transformer blocks
  int64_t n_ff = 0;             // FFN inner size
  int64_t n_head = 0;           // query heads
  int64_t n_head_kv = 0;        // key/value heads (GQA when < n_head)
  int64_t head_dim_k = 0;       // attention.key_length, else n_embd / n_head
  int64_t head_dim_v = 0;       // attention.value_length, else head_dim_k
  int64_t n_rot = 0;            // rope.dimension_count, else head_dim_k
  int64_t n_ctx_train = 0;      // context_length (0 when absent)
  float rms_eps = 1e-5f;        // attention.layer_norm_rms_epsilon

  RopeType rope_type = RopeType::kNorm;          // pairing layout
  float rope_base = 10000.0f;                    // rope.freq_base
  RopeScaling rope_scaling = RopeScaling::kNone; // rope.scaling.type
  float rope_factor = 1.0f;                      // rope.scaling.factor
  int64_t rope_orig_ctx = 0;                     // rope.scaling.original_context_length
  float rope_base_local = 10000.0f;              // gemma3 sliding-window layers
  bool has_rope_freqs = false;                   // rope_freqs.weight present (llama3)
  float rope_attn_factor = 1.0f;                 // rope.scaling.attn_factor (phi3 LongRoPE)
  bool has_long_short_rope = false;              // rope_factors_long/_short present (phi3)

  bool tied_output = false;     // no output.weight: logits use token_embd
  bool qkv_bias = false;        // attn_{q,k,v}.bias present (qwen2)
  bool fused_qkv = false;       // one attn_qkv.weight [q+k+v rows] (phi3)
  bool fused_gate_up = false;   // ffn_up.weight holds gate then up rows (phi3)
  bool qk_norm = false;         // per-head RMSNorm of q and k (gemma3, qwen3)
  bool post_norms = false;      // RMSNorm after attention and after FFN (gemma2/3)
  FfnActivation activation = FfnActivation::kSilu;  // FFN gate activation
  float embd_scale = 1.0f;      // multiplies token embeddings (gemma2/3: sqrt(n_embd))
  float attn_scale = 1.0f;      // multiplies q·k (1/sqrt(head_dim_k))
  float attn_softcap = 0.0f;    // attn_logit_softcapping, 0 = off
  float final_softcap = 0.0f;   // final_logit_softcapping, 0 = off

  // Mixture of experts (n_expert > 0): the FFN of every layer is a router
  // over n_expert expert FFNs of width n_ff_exp, n_expert_used per token.
  int64_t n_expert = 0;         // expert_count; 0 = dense FFN
  int64_t n_expert_used = 0;    // expert_used_count (the k of top-k)
  int64_t n_ff_exp = 0;         // expert_feed_forward_length, else n_ff / k
  bool moe_norm_weights = false;  // renormalise the k router weights (qwen3moe)
  // gpt-oss: top k of the raw logits, softmax over those k only
  // (llama.cpp's SOFTMAX_WEIGHT gating); else softmax over all, then top k.
  bool moe_softmax_topk = false;
  // gpt-oss experts' clamped SwiGLU: g = min(g, 7), u = clamp(u, -7, 7),
  // g * sigmoid(1.702 g) * (u + 1); else silu(g) * u.
  bool moe_swiglu_oai = false;
  bool attn_sinks = false;      // per-head sink logit in the softmax (gpt-oss)
  bool attn_out_bias = false;   // attn_output.bias (gpt-oss)
  bool swa_global_rope = false; // local layers use the global RoPE (gpt-oss)

  int64_t sliding_window = 0;   // attention.sliding_window, 0 = none
  int swa_pattern = 0;          // layer il is global iff il % swa_pattern == swa_pattern - 1

  // Whether layer `il` uses sliding-window attention.
  bool IsLocalLayer(int64_t il) const {
    return sliding_window > 0 && swa_pattern > 0 &&
           il % swa_pattern != swa_pattern - 1;
  }
  // RoPE settings of layer `il` (local layers: base 10000, no scaling).
  RopeParams LayerRope(int64_t il) const;
  int64_t q_dim() const { return n_head * head_dim_k; }
  int64_t k_dim() const { return n_head_kv * head_dim_k; }
  int64_t v_dim() const { return n_head_kv * head_dim_v; }
  bool is_moe() const { return n_expert > 0; }

  // One line: "gemma3: 18 layers, embd 640, ...".
  std::string Summary() const;
};

// Reads the config of `file`. Errors name the missing/invalid key, or the
// architecture when it is not supported.
StatusOr<ModelConfig> ModelConfigFromGguf(const gguf::GgufFile& file);

std::string_view ArchName(Arch arch);

}  // namespace weft::model
