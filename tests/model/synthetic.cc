#include "tests/model/synthetic.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <random>

#include "tensor/quant.h"
#include "util/check.h"

namespace weft::model::testing {
namespace {

class Builder {
 public:
  Builder(const SyntheticSpec& s) : s_(s), rng_(s.seed) {}

  // A [rows, cols] matrix; with n > 0, n of them in one 3-D tensor.
  void Matrix(const std::string& name, int64_t rows, int64_t cols, float scale,
              int64_t n = 0, std::optional<GgmlType> type_or = std::nullopt) {
    if (name == s_.skip_tensor) return;
    if (name == s_.wrong_shape_tensor) ++rows;
    const GgmlType type = type_or.value_or(s_.type);
    std::vector<uint64_t> dims = {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)};
    if (n > 0) {
      dims.push_back(static_cast<uint64_t>(n));
      rows *= n;
    }
    std::vector<float> v(static_cast<size_t>(rows * cols));
    for (float& x : v) x = dist_(rng_) * scale;
    auto rb = RowBytes(type, static_cast<uint64_t>(cols));
    CHECK(rb.ok()) << name;
    std::vector<uint8_t> bytes(static_cast<size_t>(*rb * rows));
    for (int64_t r = 0; r < rows; ++r) {
      CHECK(QuantizeRow(type, v.data() + r * cols, bytes.data() + r * *rb, cols).ok());
    }
    CHECK(w_.AddTensor(name, type, dims, bytes).ok());
  }
  void Vector(const std::string& name, int64_t n, float center, float spread) {
    if (name == s_.skip_tensor) return;
    if (name == s_.wrong_shape_tensor) ++n;
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = center + dist_(rng_) * spread;
    std::vector<uint8_t> bytes(v.size() * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    CHECK(w_.AddTensor(name, GgmlType::kF32, {static_cast<uint64_t>(n)}, bytes).ok());
  }
  gguf::GgufWriter& writer() { return w_; }

 private:
  const SyntheticSpec& s_;
  std::mt19937 rng_;
  std::uniform_real_distribution<float> dist_{-1.0f, 1.0f};
  gguf::GgufWriter w_;
};

}  // namespace

std::vector<uint8_t> BuildSynthetic(const SyntheticSpec& s) {
  Builder b(s);
  auto& w = b.writer();
  const std::string p = s.arch + ".";
  const int64_t hd = s.head_dim > 0 ? s.head_dim : s.n_embd / s.n_head;
  w.SetString("general.architecture", s.arch);
  w.SetUint32(p + "context_length", 256);
  w.SetUint32(p + "embedding_length", static_cast<uint32_t>(s.n_embd));
  w.SetUint32(p + "block_count", static_cast<uint32_t>(s.n_layer));
  w.SetUint32(p + "feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.SetUint32(p + "attention.head_count", static_cast<uint32_t>(s.n_head));
  w.SetUint32(p + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  w.SetFloat32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
  if (s.head_dim > 0) {
    w.SetUint32(p + "attention.key_length", static_cast<uint32_t>(hd));
    w.SetUint32(p + "attention.value_length", static_cast<uint32_t>(hd));
  }
  const bool oss = s.arch == "gpt-oss", moe = oss || s.arch == "qwen3moe";
  if (oss) {
    w.SetUint32(p + "attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
    w.SetString(p + "rope.scaling.type", "yarn");
    w.SetFloat32(p + "rope.scaling.factor", 32.0f);
    w.SetUint32(p + "rope.scaling.original_context_length", 64);
  }
  if (moe) {
    w.SetUint32(p + "expert_count", static_cast<uint32_t>(s.n_expert));
    w.SetUint32(p + "expert_used_count", static_cast<uint32_t>(s.n_expert_used));
    w.SetUint32(p + "expert_feed_forward_length", static_cast<uint32_t>(s.n_ff));
  }
  if (s.arch == "gemma3" || s.arch == "gemma2") {
    w.SetUint32(p + "attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
    w.SetFloat32(p + "rope.freq_base", 1e6f);
  }
  const bool phi3 = s.arch == "phi3";
  const bool qk_norm = s.arch == "gemma3" || s.arch == "qwen3" || s.arch == "qwen3moe";
  const bool post_norms = s.arch == "gemma3" || s.arch == "gemma2";
  const float ws = 1.0f / std::sqrt(static_cast<float>(s.n_embd));
  b.Matrix("token_embd.weight", s.n_vocab, s.n_embd, 1.0f);
  if (!s.tied) b.Matrix("output.weight", s.n_vocab, s.n_embd, ws);
  b.Vector("output_norm.weight", s.n_embd, 1.0f, 0.1f);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string l = "blk." + std::to_string(il) + ".";
    b.Vector(l + "attn_norm.weight", s.n_embd, 1.0f, 0.1f);
    if (phi3) {  // fused q|k|v
      b.Matrix(l + "attn_qkv.weight", (s.n_head + 2 * s.n_head_kv) * hd, s.n_embd, ws);
    } else {
      b.Matrix(l + "attn_q.weight", s.n_head * hd, s.n_embd, ws);
      b.Matrix(l + "attn_k.weight", s.n_head_kv * hd, s.n_embd, ws);
      b.Matrix(l + "attn_v.weight", s.n_head_kv * hd, s.n_embd, ws);
    }
    if (s.arch == "qwen2" || oss) {
      b.Vector(l + "attn_q.bias", s.n_head * hd, 0.0f, 0.5f);
      b.Vector(l + "attn_k.bias", s.n_head_kv * hd, 0.0f, 0.5f);
      b.Vector(l + "attn_v.bias", s.n_head_kv * hd, 0.0f, 0.5f);
    }
    b.Matrix(l + "attn_output.weight", s.n_embd, s.n_head * hd, ws);
    if (oss) {
      b.Vector(l + "attn_output.bias", s.n_embd, 0.0f, 0.5f);
      b.Vector(l + "attn_sinks.weight", s.n_head, 0.0f, 1.0f);
    }
    if (qk_norm) {
      b.Vector(l + "attn_q_norm.weight", hd, 1.0f, 0.1f);
      b.Vector(l + "attn_k_norm.weight", hd, 1.0f, 0.1f);
    }
    if (post_norms) {
      b.Vector(l + "post_attention_norm.weight", s.n_embd, 1.0f, 0.1f);
      b.Vector(l + "post_ffw_norm.weight", s.n_embd, 1.0f, 0.1f);
    }
    b.Vector(l + (oss ? "post_attention_norm.weight" : "ffn_norm.weight"), s.n_embd, 1.0f, 0.1f);
    if (moe) {
      const int64_t ne = s.n_expert;
      b.Matrix(l + "ffn_gate_inp.weight", ne, s.n_embd, 4 * ws, 0, GgmlType::kF32);
      const GgmlType et = s.expert_type.value_or(s.type);
      b.Matrix(l + "ffn_gate_exps.weight", s.n_ff, s.n_embd, ws, ne, et);
      b.Matrix(l + "ffn_up_exps.weight", s.n_ff, s.n_embd, ws, ne, et);
      b.Matrix(l + "ffn_down_exps.weight", s.n_embd, s.n_ff,
               1.0f / std::sqrt(static_cast<float>(s.n_ff)), ne, et);
      if (oss) {
        b.Vector(l + "ffn_gate_inp.bias", ne, 0.0f, 0.5f);
        b.Vector(l + "ffn_gate_exps.bias", ne * s.n_ff, 0.0f, 0.5f);
        b.Vector(l + "ffn_up_exps.bias", ne * s.n_ff, 0.0f, 0.5f);
        b.Vector(l + "ffn_down_exps.bias", ne * s.n_embd, 0.0f, 0.5f);
      }
      continue;
    }
    if (phi3) {  // gate rows, then up rows
      b.Matrix(l + "ffn_up.weight", 2 * s.n_ff, s.n_embd, ws);
    } else {
      b.Matrix(l + "ffn_gate.weight", s.n_ff, s.n_embd, ws);
      b.Matrix(l + "ffn_up.weight", s.n_ff, s.n_embd, ws);
    }
    b.Matrix(l + "ffn_down.weight", s.n_embd, s.n_ff, 1.0f / std::sqrt(static_cast<float>(s.n_ff)));
  }
  if (s.edit) s.edit(w);
  auto bytes = w.Serialize();
  CHECK(bytes.ok()) << bytes.status().ToString();
  return std::move(bytes).value();
}

StatusOr<SyntheticModel> LoadSynthetic(const SyntheticSpec& spec, const LoadOptions& options) {
  SyntheticModel m;
  m.bytes = BuildSynthetic(spec);
  ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Parse("synthetic.gguf", m.bytes));
  ASSIGN_OR_RETURN(m.model, Model::FromGguf(std::move(file), options));
  return m;
}

}  // namespace weft::model::testing
