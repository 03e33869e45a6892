// The layout of the newer dense families, as llama.cpp's
// src/models/{qwen3,gemma2,phi3}.cpp set them up:
//   qwen3:  NeoX RoPE, per-head RMSNorm of q and k before RoPE, no biases.
//   gemma2: NeoX RoPE, embeddings scaled by sqrt(n_embd), GeGLU (tanh),
//           post-attention and post-FFN norms, attention logits soft-capped
//           (attn_logit_softcapping, default 50) and final logits too
//           (final_logit_softcapping, default 30), sliding-window attention
//           on even layers (attention.sliding_window, default 4096;
//           attention.sliding_window_pattern, default 2), output tied to
//           token_embd. The query scale 1/sqrt(query_pre_attn_scalar) is
//           llama.cpp's rule: GGUFs carry no such key, the 27B (46 layers)
//           uses n_embd / n_head, the others head_dim_k (HF's config values).
//   phi3:   NeoX RoPE, fused attn_qkv and ffn_up (gate rows, then up rows),
//           LongRoPE factors (rope_factors_long/_short) with
//           rope.scaling.attn_factor; its sliding window is ignored, as in
//           llama.cpp (PR 13676).
#include <cmath>

#include "model/config_internal.h"
#include "util/strings.h"

namespace weft::model::config_internal {
namespace {

Status SetGemma2Layout(const gguf::GgufFile& f, const std::string& p,
                       ModelConfig* c) {
  c->rope_type = RopeType::kNeox;
  c->post_norms = true;
  c->activation = FfnActivation::kGeluTanh;
  c->embd_scale = std::sqrt(static_cast<float>(c->n_embd));
  c->tied_output = true;  // llama.cpp ignores an output.weight here
  if (!f.Has(p + "attn_logit_softcapping")) c->attn_softcap = 50.0f;
  if (!f.Has(p + "final_logit_softcapping")) c->final_softcap = 30.0f;
  ASSIGN_OR_RETURN(c->sliding_window,
                   GetIntOr(f, p + "attention.sliding_window", 4096));
  RETURN_IF_ERROR(Positive(f, p + "attention.sliding_window", c->sliding_window,
                           int64_t{1} << 30));
  ASSIGN_OR_RETURN(int64_t pattern,
                   GetIntOr(f, p + "attention.sliding_window_pattern", 2));
  RETURN_IF_ERROR(
      Positive(f, p + "attention.sliding_window_pattern", pattern, 4096));
  c->swa_pattern = static_cast<int>(pattern);
  ASSIGN_OR_RETURN(double base_swa,
                   GetFloatOr(f, p + "rope.freq_base_swa", c->rope_base));
  if (!(base_swa > 1.0 && std::isfinite(base_swa))) {
    return InvalidArgumentError(
        StrFormat("%s: %srope.freq_base_swa = %g is invalid", f.path().c_str(),
                  p.c_str(), base_swa));
  }
  c->rope_base_local = static_cast<float>(base_swa);
  if (c->n_layer == 46) {
    c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->n_embd / c->n_head));
  }
  return OkStatus();
}

}  // namespace

Status SetNewArchLayout(const gguf::GgufFile& f, const std::string& p,
                        ModelConfig* c) {
  switch (c->arch) {
    case Arch::kQwen3:
      c->rope_type = RopeType::kNeox;
      c->qk_norm = true;
      return OkStatus();
    case Arch::kGemma2:
      return SetGemma2Layout(f, p, c);
    case Arch::kPhi3:
      c->rope_type = RopeType::kNeox;
      c->fused_gate_up = true;
      return OkStatus();
    default:
      return InternalError(StrFormat("%s: no layout for architecture %s",
                                     f.path().c_str(), c->arch_name.c_str()));
  }
}

}  // namespace weft::model::config_internal
