// The newer dense families' configs and weights (model/config_archs.cc,
// weights.cc's fused views) on tiny in-memory models; their forward pass is
// checked against the numpy reference and llama.cpp by golden_test.cc.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "model/model.h"
#include "tests/model/synthetic.h"

namespace weft::model {
namespace {

using testing::LoadSynthetic;
using testing::SyntheticSpec;

TEST(ConfigArchsTest, Qwen3NormsQAndKPerHead) {
  SyntheticSpec s;
  s.arch = "qwen3";
  auto m = LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->model->config();
  EXPECT_EQ(c.arch, Arch::kQwen3);
  EXPECT_EQ(ArchName(c.arch), "qwen3");
  EXPECT_EQ(c.rope_type, RopeType::kNeox);
  EXPECT_TRUE(c.qk_norm);
  EXPECT_FALSE(c.post_norms || c.qkv_bias || c.fused_qkv || c.fused_gate_up);
  EXPECT_EQ(m->model->weights().layers[1].q_norm.size(), 8u);
  EXPECT_EQ(c.final_softcap, 0.0f);
}

TEST(ConfigArchsTest, Gemma2DefaultsAndKeys) {
  SyntheticSpec s;
  s.arch = "gemma2";
  s.n_layer = 5;
  s.sliding_window = 6;
  auto m =
      LoadSynthetic(s);  // has an output.weight: ignored, as llama.cpp does
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->model->config();
  EXPECT_EQ(c.arch, Arch::kGemma2);
  EXPECT_TRUE(c.post_norms);
  EXPECT_FALSE(c.qk_norm);
  EXPECT_TRUE(c.tied_output);
  EXPECT_EQ(m->model->weights().output.data,
            m->model->weights().token_embd.data);
  EXPECT_EQ(c.activation, FfnActivation::kGeluTanh);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(32.0f));
  EXPECT_FLOAT_EQ(c.attn_softcap, 50.0f);  // no keys: Gemma 2's values
  EXPECT_FLOAT_EQ(c.final_softcap, 30.0f);
  EXPECT_EQ(c.sliding_window, 6);
  for (int il = 0; il < 5; ++il)
    EXPECT_EQ(c.IsLocalLayer(il), il % 2 == 0) << il;
  // Local layers keep the global base (no rope.freq_base_swa key).
  EXPECT_FLOAT_EQ(c.LayerRope(0).base, 1e6f);
  EXPECT_FLOAT_EQ(c.attn_scale, 1.0f / std::sqrt(8.0f));

  s.edit = [](gguf::GgufWriter& w) {
    w.SetFloat32("gemma2.attn_logit_softcapping", 20.0f);
    w.SetFloat32("gemma2.final_logit_softcapping", 0.0f);
    w.SetUint32("gemma2.attention.sliding_window_pattern", 3);
    w.SetFloat32("gemma2.rope.freq_base_swa", 5000.0f);
  };
  auto m2 = LoadSynthetic(s);
  ASSERT_TRUE(m2.ok()) << m2.status().ToString();
  const ModelConfig& c2 = m2->model->config();
  EXPECT_FLOAT_EQ(c2.attn_softcap, 20.0f);
  EXPECT_FLOAT_EQ(c2.final_softcap, 0.0f);
  for (int il = 0; il < 5; ++il)
    EXPECT_EQ(c2.IsLocalLayer(il), il % 3 != 2) << il;
  EXPECT_FLOAT_EQ(c2.LayerRope(0).base, 5000.0f);
  EXPECT_FLOAT_EQ(c2.LayerRope(2).base, 1e6f);
}

// Puts n float32 values v0, v0 + step, ... as a 1-D tensor.
void AddVector(gguf::GgufWriter& w, const std::string& name, int n, float v0,
               float step) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[i] = v0 + step * static_cast<float>(i);
  std::vector<uint8_t> bytes(v.size() * 4);
  std::memcpy(bytes.data(), v.data(), bytes.size());
  ASSERT_TRUE(
      w.AddTensor(name, GgmlType::kF32, {static_cast<uint64_t>(n)}, bytes)
          .ok());
}

TEST(ConfigArchsTest, Phi3FusedTensorsAreViews) {
  SyntheticSpec s;
  s.arch = "phi3";
  s.type = GgmlType::kQ8_0;
  s.n_ff = 96;
  auto m = LoadSynthetic(s, LoadOptions{.repack_x8 = false});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->model->config();
  EXPECT_TRUE(c.fused_qkv && c.fused_gate_up);
  EXPECT_EQ(c.rope_type, RopeType::kNeox);
  const LayerWeights& L = m->model->weights().layers[1];
  const gguf::TensorInfo* qkv =
      m->model->gguf().FindTensor("blk.1.attn_qkv.weight");
  const gguf::TensorInfo* gu =
      m->model->gguf().FindTensor("blk.1.ffn_up.weight");
  ASSERT_TRUE(qkv != nullptr && gu != nullptr);
  // q = rows [0, 32), k = [32, 48), v = [48, 64) of the one tensor, no copy.
  EXPECT_EQ(L.wq.data, qkv->data);
  EXPECT_EQ(L.wq.rows, 32);
  EXPECT_EQ(L.wk.data, qkv->data + 32 * L.wq.row_bytes);
  EXPECT_EQ(L.wk.rows, 16);
  EXPECT_EQ(L.wv.data, qkv->data + 48 * L.wq.row_bytes);
  EXPECT_EQ(L.wv.rows, 16);
  EXPECT_EQ(L.ffn_gate.data, gu->data);
  EXPECT_EQ(L.ffn_up.data, gu->data + 96 * L.ffn_gate.row_bytes);
  EXPECT_EQ(L.ffn_up.rows, 96);
  // A fused tensor of the wrong height is an error naming it.
  s.wrong_shape_tensor = "blk.0.attn_qkv.weight";
  auto bad = LoadSynthetic(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blk.0.attn_qkv.weight"),
            std::string::npos);
}

TEST(ConfigArchsTest, Phi3LongRopePicksFactorsByContext) {
  SyntheticSpec s;
  s.arch = "phi3";
  s.edit = [](gguf::GgufWriter& w) {
    AddVector(w, "rope_factors_long.weight", 4, 2.0f, 1.0f);
    AddVector(w, "rope_factors_short.weight", 4, 1.0f, 0.25f);
    w.SetUint32("phi3.rope.scaling.original_context_length", 64);
    w.SetFloat32("phi3.rope.scaling.attn_factor", 1.25f);
  };
  auto short_m = LoadSynthetic(s);
  ASSERT_TRUE(short_m.ok()) << short_m.status().ToString();
  const ModelConfig& c = short_m->model->config();
  EXPECT_TRUE(c.has_long_short_rope);
  EXPECT_FLOAT_EQ(c.LayerRope(1).attn_factor, 1.25f);
  EXPECT_EQ(short_m->model->weights().rope_freqs,
            (std::vector<float>{1, 1.25f, 1.5f, 1.75f}));
  auto long_m = LoadSynthetic(s, LoadOptions{.n_ctx_seq = 65});
  ASSERT_TRUE(long_m.ok());
  EXPECT_EQ(long_m->model->weights().rope_freqs,
            (std::vector<float>{2, 3, 4, 5}));
  auto at_orig = LoadSynthetic(s, LoadOptions{.n_ctx_seq = 64});
  ASSERT_TRUE(at_orig.ok());
  EXPECT_EQ(at_orig->model->weights().rope_freqs[0], 1.0f);
}

TEST(ConfigArchsTest, UnsupportedArchitectureListsTheSupportedOnes) {
  SyntheticSpec s;
  s.arch = "mamba";
  auto m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("qwen3, gemma2, phi3"), std::string::npos)
      << m.status().message();
}

}  // namespace
}  // namespace weft::model
