#include "model/config.h"

#include <cmath>

#include "model/config_internal.h"
#include "util/enum_name.h"
#include "util/strings.h"

namespace weft::model {
namespace config_internal {

// Reads "<arch>.<key>" as an integer; NotFound names the key.
StatusOr<int64_t> GetInt(const gguf::GgufFile& f, const std::string& key) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) {
    return NotFoundError(StrFormat("%s: missing metadata key %s",
                                   f.path().c_str(), key.c_str()));
  }
  if (!v->is_integer()) {
    return InvalidArgumentError(StrFormat(
        "%s: metadata key %s must be an integer, is %s", f.path().c_str(),
        key.c_str(), std::string(gguf::ValueTypeName(v->type())).c_str()));
  }
  return v->AsInt64();
}

StatusOr<int64_t> GetIntOr(const gguf::GgufFile& f, const std::string& key,
                           int64_t def) {
  if (!f.Has(key)) return def;
  return GetInt(f, key);
}

StatusOr<double> GetFloatOr(const gguf::GgufFile& f, const std::string& key,
                            double def) {
  const gguf::Value* v = f.Find(key);
  if (v == nullptr) return def;
  if (!v->is_float() && !v->is_integer()) {
    return InvalidArgumentError(StrFormat(
        "%s: metadata key %s must be a number, is %s", f.path().c_str(),
        key.c_str(), std::string(gguf::ValueTypeName(v->type())).c_str()));
  }
  return v->AsDouble();
}

Status Positive(const gguf::GgufFile& f, const std::string& key, int64_t v,
                int64_t max) {
  if (v <= 0 || v > max) {
    return InvalidArgumentError(StrFormat(
        "%s: metadata key %s = %lld is out of range [1, %lld]",
        f.path().c_str(), key.c_str(), static_cast<long long>(v),
        static_cast<long long>(max)));
  }
  return OkStatus();
}

}  // namespace config_internal

using namespace config_internal;  // NOLINT: this file defines them

std::string_view ArchName(Arch arch) {
  static constexpr std::string_view kNames[] = {"llama", "qwen2",  "gemma3", "qwen3moe",
                                                 "qwen3", "gemma2", "phi3",   "gpt-oss"};
  return EnumName<Arch::kGptOss>(arch, kNames, "?");
}

RopeParams ModelConfig::LayerRope(int64_t il) const {
  RopeParams p;
  p.attn_factor = rope_attn_factor;  // ggml applies it on every layer
  if (IsLocalLayer(il) && !swa_global_rope) {
    p.base = rope_base_local;
    return p;
  }
  p.base = rope_base;
  p.scaling = rope_scaling;
  p.freq_scale = rope_scaling == RopeScaling::kNone ? 1.0f : 1.0f / rope_factor;
  p.orig_ctx = rope_orig_ctx;
  return p;
}

std::string ModelConfig::Summary() const {
  return StrFormat(
      "%s: %lld layers, embd %lld, ffn %lld, heads %lld/%lld kv, head_dim "
      "%lld, vocab %lld, rope base %g%s, eps %g%s%s%s",
      arch_name.c_str(), static_cast<long long>(n_layer),
      static_cast<long long>(n_embd), static_cast<long long>(n_ff),
      static_cast<long long>(n_head), static_cast<long long>(n_head_kv),
      static_cast<long long>(head_dim_k), static_cast<long long>(n_vocab),
      rope_base,
      rope_scaling == RopeScaling::kNone
          ? ""
          : StrFormat(" (%s x%g)",
                      rope_scaling == RopeScaling::kLinear ? "linear" : "yarn",
                      rope_factor)
                .c_str(),
      rms_eps,
      sliding_window > 0
          ? StrFormat(", sliding window %lld", static_cast<long long>(sliding_window)).c_str()
          : "",
      tied_output ? ", tied output" : "",
      is_moe() ? StrFormat(", %lld experts (%lld used, ffn %lld)",
                           static_cast<long long>(n_expert),
                           static_cast<long long>(n_expert_used),
                           static_cast<long long>(n_ff_exp)).c_str()
               : "");
}

namespace {

// general.architecture, one of the supported ones.
Status ReadArchitecture(const gguf::GgufFile& f, ModelConfig* c) {
  auto arch_or = f.GetString("general.architecture");
  if (!arch_or.ok()) {
    return InvalidArgumentError(StrFormat(
        "%s: no general.architecture: %s", f.path().c_str(),
        arch_or.status().message().c_str()));
  }
  c->arch_name = *arch_or;
  std::string supported;
  for (int a = 0; a <= static_cast<int>(Arch::kGptOss); ++a) {
    const std::string_view name = ArchName(static_cast<Arch>(a));
    if (c->arch_name == name) {
      c->arch = static_cast<Arch>(a);
      return OkStatus();
    }
    supported += (a ? ", " : "") + std::string(name);
  }
  return UnimplementedError(StrFormat("%s: unsupported architecture '%s' (supported: %s)",
                                      f.path().c_str(), CEscape(c->arch_name).c_str(),
                                      supported.c_str()));
}

// Widths, layers, heads, head sizes, context and the RMS norm epsilon.
Status ReadDimensions(const gguf::GgufFile& f, const std::string& p, ModelConfig* c) {
  ASSIGN_OR_RETURN(c->n_embd, GetInt(f, p + "embedding_length"));
  RETURN_IF_ERROR(Positive(f, p + "embedding_length", c->n_embd));
  ASSIGN_OR_RETURN(c->n_layer, GetInt(f, p + "block_count"));
  RETURN_IF_ERROR(Positive(f, p + "block_count", c->n_layer, 4096));
  ASSIGN_OR_RETURN(c->n_ff, GetInt(f, p + "feed_forward_length"));
  RETURN_IF_ERROR(Positive(f, p + "feed_forward_length", c->n_ff));
  ASSIGN_OR_RETURN(c->n_head, GetInt(f, p + "attention.head_count"));
  RETURN_IF_ERROR(Positive(f, p + "attention.head_count", c->n_head, 4096));
  ASSIGN_OR_RETURN(c->n_head_kv,
                   GetIntOr(f, p + "attention.head_count_kv", c->n_head));
  RETURN_IF_ERROR(Positive(f, p + "attention.head_count_kv", c->n_head_kv, 4096));
  if (c->n_head % c->n_head_kv != 0) {
    return InvalidArgumentError(StrFormat(
        "%s: attention.head_count %lld is not a multiple of head_count_kv %lld",
        f.path().c_str(), static_cast<long long>(c->n_head),
        static_cast<long long>(c->n_head_kv)));
  }
  if (!f.Has(p + "attention.key_length") && c->n_embd % c->n_head != 0) {
    return InvalidArgumentError(StrFormat(
        "%s: embedding_length %lld is not a multiple of head_count %lld",
        f.path().c_str(), static_cast<long long>(c->n_embd),
        static_cast<long long>(c->n_head)));
  }
  ASSIGN_OR_RETURN(c->head_dim_k, GetIntOr(f, p + "attention.key_length",
                                          c->n_embd / c->n_head));
  RETURN_IF_ERROR(Positive(f, p + "attention.key_length", c->head_dim_k, 65536));
  ASSIGN_OR_RETURN(c->head_dim_v,
                   GetIntOr(f, p + "attention.value_length", c->head_dim_k));
  RETURN_IF_ERROR(Positive(f, p + "attention.value_length", c->head_dim_v, 65536));
  ASSIGN_OR_RETURN(c->n_rot, GetIntOr(f, p + "rope.dimension_count", c->head_dim_k));
  if (c->n_rot <= 0 || c->n_rot > c->head_dim_k || c->n_rot % 2 != 0) {
    return InvalidArgumentError(StrFormat(
        "%s: rope.dimension_count %lld must be even and in [2, %lld]",
        f.path().c_str(), static_cast<long long>(c->n_rot),
        static_cast<long long>(c->head_dim_k)));
  }
  ASSIGN_OR_RETURN(c->n_ctx_train, GetIntOr(f, p + "context_length", 0));
  if (c->n_ctx_train < 0) c->n_ctx_train = 0;

  const std::string eps_key = p + "attention.layer_norm_rms_epsilon";
  if (!f.Has(eps_key)) {
    return NotFoundError(StrFormat("%s: missing metadata key %s",
                                   f.path().c_str(), eps_key.c_str()));
  }
  ASSIGN_OR_RETURN(double eps, GetFloatOr(f, eps_key, 1e-5));
  if (!(eps > 0 && eps < 1)) {
    return InvalidArgumentError(StrFormat("%s: %s = %g is out of range",
                                          f.path().c_str(), eps_key.c_str(), eps));
  }
  c->rms_eps = static_cast<float>(eps);
  return OkStatus();
}

// RoPE: base frequency and scaling (none, linear, YaRN).
Status ReadRope(const gguf::GgufFile& f, const std::string& p, ModelConfig* c) {
  ASSIGN_OR_RETURN(double base, GetFloatOr(f, p + "rope.freq_base", 10000.0));
  if (!(base > 1.0 && std::isfinite(base))) {
    return InvalidArgumentError(StrFormat("%s: %srope.freq_base = %g is invalid",
                                          f.path().c_str(), p.c_str(), base));
  }
  c->rope_base = static_cast<float>(base);
  std::string scaling = "none";
  if (f.Has(p + "rope.scaling.type")) {
    ASSIGN_OR_RETURN(scaling, f.GetString(p + "rope.scaling.type"));
  }
  ASSIGN_OR_RETURN(double factor, GetFloatOr(f, p + "rope.scaling.factor", 0.0));
  if (factor == 0.0 && f.Has(p + "rope.scale_linear")) {
    ASSIGN_OR_RETURN(factor, GetFloatOr(f, p + "rope.scale_linear", 0.0));
    if (!f.Has(p + "rope.scaling.type")) scaling = "linear";
  }
  if (scaling == "none" || scaling.empty()) {
    c->rope_scaling = RopeScaling::kNone;
  } else if (scaling == "linear") {
    c->rope_scaling = RopeScaling::kLinear;
  } else if (scaling == "yarn") {
    c->rope_scaling = RopeScaling::kYarn;
  } else {
    return UnimplementedError(StrFormat(
        "%s: unsupported %srope.scaling.type '%s' (none, linear, yarn)",
        f.path().c_str(), p.c_str(), CEscape(scaling).c_str()));
  }
  if (c->rope_scaling != RopeScaling::kNone) {
    if (factor == 0.0) factor = 1.0;
    if (!(factor >= 1e-3 && factor <= 1e6)) {
      return InvalidArgumentError(StrFormat(
          "%s: %srope.scaling.factor = %g is invalid", f.path().c_str(),
          p.c_str(), factor));
    }
    c->rope_factor = static_cast<float>(factor);
  }
  ASSIGN_OR_RETURN(c->rope_orig_ctx,
                   GetIntOr(f, p + "rope.scaling.original_context_length",
                            c->n_ctx_train));
  ASSIGN_OR_RETURN(double attn_factor, GetFloatOr(f, p + "rope.scaling.attn_factor", 1.0));
  if (!(attn_factor > 0 && attn_factor < 100)) {
    return InvalidArgumentError(StrFormat("%s: %srope.scaling.attn_factor = %g is invalid",
                                          f.path().c_str(), p.c_str(), attn_factor));
  }
  c->rope_attn_factor = static_cast<float>(attn_factor);
  if (c->rope_scaling == RopeScaling::kYarn && c->rope_orig_ctx <= 0) {
    return InvalidArgumentError(StrFormat(
        "%s: YaRN needs %srope.scaling.original_context_length",
        f.path().c_str(), p.c_str()));
  }
  return OkStatus();
}

// Softcapping (gemma2-style keys; gemma3 GGUFs normally have none).
Status ReadSoftcapping(const gguf::GgufFile& f, const std::string& p, ModelConfig* c) {
  ASSIGN_OR_RETURN(double fsc, GetFloatOr(f, p + "final_logit_softcapping", 0.0));
  ASSIGN_OR_RETURN(double asc, GetFloatOr(f, p + "attn_logit_softcapping", 0.0));
  if (fsc < 0 || asc < 0 || !std::isfinite(fsc) || !std::isfinite(asc)) {
    return InvalidArgumentError(StrFormat("%s: negative logit softcapping",
                                          f.path().c_str()));
  }
  c->final_softcap = static_cast<float>(fsc);
  c->attn_softcap = static_cast<float>(asc);
  return OkStatus();
}

// Mixture of experts: expert_count, expert_used_count (one for all layers)
// and expert_feed_forward_length (else n_ff / n_expert_used, as llama.cpp).
Status ReadExperts(const gguf::GgufFile& f, const std::string& p, ModelConfig* c) {
  ASSIGN_OR_RETURN(c->n_expert, GetInt(f, p + "expert_count"));
  RETURN_IF_ERROR(Positive(f, p + "expert_count", c->n_expert, 4096));
  ASSIGN_OR_RETURN(c->n_expert_used, GetInt(f, p + "expert_used_count"));
  RETURN_IF_ERROR(Positive(f, p + "expert_used_count", c->n_expert_used, c->n_expert));
  ASSIGN_OR_RETURN(c->n_ff_exp, GetIntOr(f, p + "expert_feed_forward_length",
                                        c->n_ff / c->n_expert_used));
  return Positive(f, p + "expert_feed_forward_length", c->n_ff_exp);
}

// Per-architecture layout, as llama.cpp builds these graphs.
Status SetArchLayout(const gguf::GgufFile& f, const std::string& p, ModelConfig* c) {
  c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->head_dim_k));
  switch (c->arch) {
    case Arch::kLlama:
      c->rope_type = RopeType::kNorm;
      break;
    case Arch::kQwen2:
      c->rope_type = RopeType::kNeox;
      break;
    case Arch::kGemma3: {
      c->rope_type = RopeType::kNeox;
      c->qk_norm = true;
      c->post_norms = true;
      c->activation = FfnActivation::kGeluTanh;
      c->embd_scale = std::sqrt(static_cast<float>(c->n_embd));
      ASSIGN_OR_RETURN(c->sliding_window, GetInt(f, p + "attention.sliding_window"));
      RETURN_IF_ERROR(Positive(f, p + "attention.sliding_window", c->sliding_window,
                               int64_t{1} << 30));
      c->swa_pattern = 6;
      c->rope_base_local = 10000.0f;
      // llama.cpp: the 27B model (62 layers) scales by n_embd / n_head.
      if (c->n_layer == 62) {
        c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->n_embd / c->n_head));
      }
      break;
    }
    case Arch::kQwen3Moe:
      c->rope_type = RopeType::kNeox;
      c->qk_norm = true;
      RETURN_IF_ERROR(ReadExperts(f, p, c));
      c->moe_norm_weights = true;  // llama.cpp: build_moe_ffn(norm_w = true)
      break;
    case Arch::kGptOss: {
      // llama.cpp's openai-moe graph: sliding window on even layers (the
      // same YaRN RoPE on all), sinks, biases, SOFTMAX_WEIGHT gating,
      // SWIGLU_OAI experts, q.k scaled by 1/sqrt(n_rot).
      c->rope_type = RopeType::kNeox;
      RETURN_IF_ERROR(ReadExperts(f, p, c));
      c->moe_softmax_topk = true;
      c->moe_swiglu_oai = true;
      c->attn_sinks = true;
      c->attn_out_bias = true;
      c->swa_global_rope = true;
      ASSIGN_OR_RETURN(c->sliding_window, GetInt(f, p + "attention.sliding_window"));
      RETURN_IF_ERROR(Positive(f, p + "attention.sliding_window", c->sliding_window,
                               int64_t{1} << 30));
      c->swa_pattern = 2;
      c->attn_scale = 1.0f / std::sqrt(static_cast<float>(c->n_rot));
      break;
    }
    default:
      return SetNewArchLayout(f, p, c);
  }
  return OkStatus();
}

// From the tensors: the vocabulary size, tied output, biases, rope_freqs.
Status ReadTensorShapes(const gguf::GgufFile& f, ModelConfig* c) {
  const gguf::TensorInfo* embd = f.FindTensor("token_embd.weight");
  if (embd == nullptr) {
    return NotFoundError(StrFormat("%s: missing tensor token_embd.weight",
                                   f.path().c_str()));
  }
  if (embd->dims.size() != 2 || embd->ne(0) != static_cast<uint64_t>(c->n_embd) ||
      embd->ne(1) == 0 || embd->ne(1) > (uint64_t{1} << 31)) {
    return InvalidArgumentError(StrFormat(
        "%s: tensor token_embd.weight has shape [%llu, %llu], want [%lld, vocab]",
        f.path().c_str(), static_cast<unsigned long long>(embd->ne(0)),
        static_cast<unsigned long long>(embd->ne(1)),
        static_cast<long long>(c->n_embd)));
  }
  c->n_vocab = static_cast<int64_t>(embd->ne(1));
  c->tied_output = c->tied_output || f.FindTensor("output.weight") == nullptr;
  c->qkv_bias = f.FindTensor("blk.0.attn_q.bias") != nullptr;
  c->has_rope_freqs = f.FindTensor("rope_freqs.weight") != nullptr;
  c->has_long_short_rope = f.FindTensor("rope_factors_long.weight") != nullptr ||
                           f.FindTensor("blk.0.rope_factors_long.weight") != nullptr;
  // llama.cpp's create_tensor_qkv: a fused attn_qkv replaces q, k and v.
  c->fused_qkv = f.FindTensor("blk.0.attn_qkv.weight") != nullptr;
  if (c->fused_qkv) c->qkv_bias = false;
  return OkStatus();
}

}  // namespace

StatusOr<ModelConfig> ModelConfigFromGguf(const gguf::GgufFile& f) {
  ModelConfig c;
  RETURN_IF_ERROR(ReadArchitecture(f, &c));
  const std::string p = c.arch_name + ".";
  RETURN_IF_ERROR(ReadDimensions(f, p, &c));
  RETURN_IF_ERROR(ReadRope(f, p, &c));
  RETURN_IF_ERROR(ReadSoftcapping(f, p, &c));
  RETURN_IF_ERROR(SetArchLayout(f, p, &c));
  RETURN_IF_ERROR(ReadTensorShapes(f, &c));
  return c;
}

}  // namespace weft::model
