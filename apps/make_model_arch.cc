// `weft make-model` for qwen3, gemma2 and phi3 (see make_model_arch.h).
// Tensor names and shapes are those llama.cpp's loaders ask for
// (src/models/{qwen3,gemma2,phi3}.cpp): qwen3 adds attn_q_norm/attn_k_norm;
// gemma2 post_attention_norm/post_ffw_norm and a tied output; phi3 has one
// fused attn_qkv [dim, q + k + v], one ffn_up [dim, 2 * ffn] (gate rows
// first, then up) and LongRoPE factors rope_factors_long/_short.
#include "apps/make_model_arch.h"

#include <cmath>

#include "util/strings.h"

namespace weft::apps {

std::string DefaultModelName(const std::string& arch) {
  return arch == "phi3" ? "synthetic-phi" : "synthetic-" + arch;
}

bool IsNewArch(const std::string& arch) {
  return arch == "qwen3" || arch == "gemma2" || arch == "phi3";
}

std::vector<TensorSpec> BuildNewArchSpecs(const ModelShape& s) {
  const uint64_t dim = s.dim, ffn = s.ffn, vocab = s.vocab;
  const uint64_t hd = s.head_dim;
  const uint64_t q_dim = s.heads * hd, kv_dim = s.kv_heads * hd;
  const bool phi3 = s.arch == "phi3", gemma2 = s.arch == "gemma2";
  std::vector<TensorSpec> specs;
  specs.push_back({"token_embd.weight", {dim, vocab}, Init::kWeight});
  if (phi3) {
    specs.push_back({"rope_factors_long.weight", {hd / 2}, Init::kFactor});
    specs.push_back({"rope_factors_short.weight", {hd / 2}, Init::kFactor});
  }
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = StrFormat("blk.%lld.", static_cast<long long>(l));
    specs.push_back({p + "attn_norm.weight", {dim}, Init::kNorm});
    if (phi3) {
      specs.push_back(
          {p + "attn_qkv.weight", {dim, q_dim + 2 * kv_dim}, Init::kWeight});
    } else {
      specs.push_back({p + "attn_q.weight", {dim, q_dim}, Init::kWeight});
      specs.push_back({p + "attn_k.weight", {dim, kv_dim}, Init::kWeight});
      specs.push_back({p + "attn_v.weight", {dim, kv_dim}, Init::kWeight});
    }
    if (s.arch == "qwen3") {
      specs.push_back({p + "attn_q_norm.weight", {hd}, Init::kNorm});
      specs.push_back({p + "attn_k_norm.weight", {hd}, Init::kNorm});
    }
    specs.push_back({p + "attn_output.weight", {q_dim, dim}, Init::kWeight});
    if (gemma2)
      specs.push_back({p + "post_attention_norm.weight", {dim}, Init::kNorm});
    specs.push_back({p + "ffn_norm.weight", {dim}, Init::kNorm});
    if (phi3) {
      specs.push_back({p + "ffn_up.weight", {dim, 2 * ffn}, Init::kWeight});
    } else {
      specs.push_back({p + "ffn_gate.weight", {dim, ffn}, Init::kWeight});
      specs.push_back({p + "ffn_up.weight", {dim, ffn}, Init::kWeight});
    }
    specs.push_back({p + "ffn_down.weight", {ffn, dim}, Init::kWeight});
    if (gemma2)
      specs.push_back({p + "post_ffw_norm.weight", {dim}, Init::kNorm});
  }
  specs.push_back({"output_norm.weight", {dim}, Init::kNorm});
  if (!s.tied) specs.push_back({"output.weight", {dim, vocab}, Init::kWeight});
  return specs;
}

void SetNewArchMetadata(const ModelShape& s, gguf::GgufWriter* w) {
  const std::string a = s.arch + ".";
  if (s.arch == "gemma2") {
    // By default the values of the real Gemma 2 models (50, 30).
    w->SetUint32(a + "attention.sliding_window",
                 static_cast<uint32_t>(s.sliding_window));
    w->SetFloat32(a + "attn_logit_softcapping", static_cast<float>(s.attn_softcap));
    w->SetFloat32(a + "final_logit_softcapping", static_cast<float>(s.final_softcap));
  }
  if (s.arch == "phi3") {
    // As Phi-3-mini-128k's converter writes them: the short factors apply
    // up to the original context, and cos/sin are scaled by
    // sqrt(1 + ln(scale) / ln(original context)) with scale = 32.
    w->SetUint32(a + "rope.scaling.original_context_length",
                 static_cast<uint32_t>(s.ctx));
    const double attn_factor =
        std::sqrt(1.0 + std::log(32.0) / std::log(4096.0));
    w->SetFloat32(a + "rope.scaling.attn_factor",
                  static_cast<float>(attn_factor));
  }
}

}  // namespace weft::apps
