// Unit tests of ModelConfig, weight loading checks, the KV storage, ops and
// forward-pass invariants, on tiny synthetic models.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/ops.h"
#include "tests/model/synthetic.h"

namespace weft::model {
namespace {

using testing::LoadSynthetic;
using testing::SyntheticSpec;

std::vector<float> RunBatch(const Model& m, KvStorage* kv, const Batch& b) {
  std::vector<float> logits;
  Status s = m.Forward(b, kv, &logits);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return logits;
}

float MaxAbsDiff(const float* a, const float* b, int64_t n) {
  float d = 0;
  for (int64_t i = 0; i < n; ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

TEST(ModelConfigTest, ReadsLlama) {
  auto m = LoadSynthetic({});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ModelConfig& c = m->model->config();
  EXPECT_EQ(c.arch, Arch::kLlama);
  EXPECT_EQ(c.n_embd, 32);
  EXPECT_EQ(c.n_layer, 2);
  EXPECT_EQ(c.head_dim_k, 8);
  EXPECT_EQ(c.n_head_kv, 2);
  EXPECT_EQ(c.n_vocab, 64);
  EXPECT_EQ(c.rope_type, RopeType::kNorm);
  EXPECT_FALSE(c.tied_output);
  EXPECT_FALSE(c.qkv_bias);
  EXPECT_FLOAT_EQ(c.rope_base, 10000.0f);
  EXPECT_FALSE(c.IsLocalLayer(0));
}

TEST(ModelConfigTest, ReadsQwen2AndGemma3Specifics) {
  SyntheticSpec q;
  q.arch = "qwen2";
  q.tied = true;
  auto mq = LoadSynthetic(q);
  ASSERT_TRUE(mq.ok()) << mq.status().ToString();
  EXPECT_EQ(mq->model->config().rope_type, RopeType::kNeox);
  EXPECT_TRUE(mq->model->config().qkv_bias);
  EXPECT_TRUE(mq->model->config().tied_output);
  EXPECT_EQ(mq->model->weights().output.data, mq->model->weights().token_embd.data);

  SyntheticSpec g;
  g.arch = "gemma3";
  g.head_dim = 16;  // != n_embd / n_head
  g.n_layer = 7;
  auto mg = LoadSynthetic(g);
  ASSERT_TRUE(mg.ok()) << mg.status().ToString();
  const ModelConfig& c = mg->model->config();
  EXPECT_EQ(c.head_dim_k, 16);
  EXPECT_EQ(c.q_dim(), 64);
  EXPECT_TRUE(c.qk_norm && c.post_norms);
  EXPECT_EQ(c.activation, FfnActivation::kGeluTanh);
  EXPECT_FLOAT_EQ(c.embd_scale, std::sqrt(32.0f));
  EXPECT_FLOAT_EQ(c.attn_scale, 0.25f);
  for (int il = 0; il < 7; ++il) EXPECT_EQ(c.IsLocalLayer(il), il != 5) << il;
  EXPECT_FLOAT_EQ(c.LayerRope(0).base, 10000.0f);
  EXPECT_FLOAT_EQ(c.LayerRope(5).base, 1e6f);
}

TEST(ModelConfigTest, RopeScaling) {
  SyntheticSpec s;
  s.edit = [](gguf::GgufWriter& w) {
    w.SetString("llama.rope.scaling.type", "yarn");
    w.SetFloat32("llama.rope.scaling.factor", 4.0f);
    w.SetUint32("llama.rope.scaling.original_context_length", 64);
  };
  auto m = LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  RopeParams p = m->model->config().LayerRope(0);
  EXPECT_EQ(p.scaling, RopeScaling::kYarn);
  EXPECT_FLOAT_EQ(p.freq_scale, 0.25f);
  EXPECT_EQ(p.orig_ctx, 64);

  s.edit = [](gguf::GgufWriter& w) { w.SetString("llama.rope.scaling.type", "weird"); };
  auto bad = LoadSynthetic(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("weird"), std::string::npos);
}

TEST(ModelConfigTest, ErrorsNameTheProblem) {
  SyntheticSpec s;
  s.arch = "gpt2";
  auto m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("unsupported architecture 'gpt2'"), std::string::npos)
      << m.status().message();

  s = {};
  s.edit = [](gguf::GgufWriter& w) { w.SetString("llama.block_count", "two"); };
  m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("llama.block_count"), std::string::npos);

  s = {};
  s.skip_tensor = "blk.1.ffn_up.weight";
  m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("missing tensor blk.1.ffn_up.weight"), std::string::npos)
      << m.status().message();

  s = {};
  s.wrong_shape_tensor = "blk.0.attn_k.weight";
  m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("blk.0.attn_k.weight has shape"), std::string::npos)
      << m.status().message();

  s = {};
  s.arch = "gemma3";
  s.wrong_shape_tensor = "blk.0.attn_q_norm.weight";
  m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("attn_q_norm.weight"), std::string::npos);

  s = {};
  s.n_head_kv = 3;  // 4 % 3 != 0
  m = LoadSynthetic(s);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("head_count_kv"), std::string::npos);
}

TEST(OpsTest, RopeLayouts) {
  // One head of 4 dims, rotated by theta_0 = pos, theta_1 = pos / 100.
  RopeParams p;
  p.base = 10000.0f;
  float cs[4];
  RopeTable(p, 4, 1, nullptr, cs);
  EXPECT_NEAR(cs[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(cs[1], std::sin(1.0f), 1e-6);
  EXPECT_NEAR(cs[2], std::cos(0.01f), 1e-6);
  float norm[4] = {1, 0, 1, 0};
  ApplyRope(norm, 1, 4, 4, RopeType::kNorm, cs);  // pairs (0,1), (2,3)
  EXPECT_NEAR(norm[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(norm[1], std::sin(1.0f), 1e-6);
  EXPECT_NEAR(norm[3], std::sin(0.01f), 1e-6);
  float neox[4] = {1, 1, 0, 0};
  ApplyRope(neox, 1, 4, 4, RopeType::kNeox, cs);  // pairs (0,2), (1,3)
  EXPECT_NEAR(neox[0], std::cos(1.0f), 1e-6);
  EXPECT_NEAR(neox[2], std::sin(1.0f), 1e-6);
  EXPECT_NEAR(neox[3], std::sin(0.01f), 1e-6);
  // Linear scaling by 2 at position 2 equals no scaling at position 1.
  RopeParams lin = p;
  lin.scaling = RopeScaling::kLinear;
  lin.freq_scale = 0.5f;
  float cs2[4];
  RopeTable(lin, 4, 2, nullptr, cs2);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(cs2[i], cs[i], 1e-6);
  // Frequency factors divide theta.
  const float ff[2] = {2.0f, 1.0f};
  RopeTable(p, 4, 2, ff, cs2);
  EXPECT_NEAR(cs2[0], cs[0], 1e-6);
}

TEST(OpsTest, MatMulMatchesNaiveForQuantizedRows) {
  SyntheticSpec s;
  s.type = GgmlType::kQ8_0;
  auto m = LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const WeightMatrix& w = m->model->weights().layers[0].ffn_gate;  // [64, 32]
  std::vector<float> x(3 * 32);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i));
  std::vector<float> y(3 * 64), row(32);
  MatMul(w, x.data(), 3, y.data(), 2);
  for (int r = 0; r < 64; ++r) {
    DecodeRow(w, r, row.data());
    for (int t = 0; t < 3; ++t) {
      double want = 0;
      for (int k = 0; k < 32; ++k) want += static_cast<double>(x[t * 32 + k]) * row[k];
      EXPECT_NEAR(y[t * 64 + r], want, 1e-4);
    }
  }
}

TEST(KvCacheTest, ReserveTruncateCommit) {
  auto m = LoadSynthetic({});
  ASSERT_TRUE(m.ok());
  auto kv = ContiguousKvStorage::Create(m->model->config(), 8, 2);
  ASSERT_TRUE(kv.ok());
  EXPECT_TRUE((*kv)->Reserve(1, 8).ok());
  EXPECT_FALSE((*kv)->Reserve(1, 9).ok());
  EXPECT_FALSE((*kv)->Reserve(2, 1).ok());
  (*kv)->KeyRow(1, 1, 3)[0] = 5.0f;
  (*kv)->Commit(1, 4);
  EXPECT_EQ((*kv)->Length(1), 4);
  EXPECT_EQ((*kv)->Length(0), 0);
  const KvStorage& ckv = **kv;
  EXPECT_EQ(ckv.KeyRow(1, 1, 3)[0], 5.0f);
  EXPECT_EQ(ckv.KeyRow(1, 0, 3)[0], 0.0f);
  (*kv)->Truncate(1, 2);
  EXPECT_EQ((*kv)->Length(1), 2);
  EXPECT_FALSE(ContiguousKvStorage::Create(m->model->config(), 0).ok());
}

// Prefilling N tokens at once must give the same logits as feeding them one
// at a time through the cache (float32; only summation order differs).
void CheckBatchedEqualsIncremental(const SyntheticSpec& spec) {
  auto m = LoadSynthetic(spec);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const Model& model = *m->model;
  const int64_t V = model.config().n_vocab;
  std::vector<int32_t> ids = {1, 5, 9, 2, 33, 7, 60, 11, 3, 4};
  auto kv1 = ContiguousKvStorage::Create(model.config(), 32);
  auto kv2 = ContiguousKvStorage::Create(model.config(), 32);
  ASSERT_TRUE(kv1.ok() && kv2.ok());
  std::vector<float> all = RunBatch(model, kv1->get(), Batch::ForPrompt(ids, 0, 0, true));
  ASSERT_EQ(all.size(), ids.size() * V);
  for (size_t i = 0; i < ids.size(); ++i) {
    Batch b;
    b.Add(ids[i], static_cast<int32_t>(i), 0, true);
    std::vector<float> one = RunBatch(model, kv2->get(), b);
    ASSERT_EQ(one.size(), static_cast<size_t>(V));
    EXPECT_LT(MaxAbsDiff(one.data(), all.data() + i * V, V), 1e-4) << "position " << i;
  }
  // Re-running from position 4 overwrites the cache tail identically.
  std::vector<int32_t> tail(ids.begin() + 4, ids.end());
  std::vector<float> again = RunBatch(model, kv1->get(), Batch::ForPrompt(tail, 4));
  EXPECT_LT(MaxAbsDiff(again.data(), all.data() + (ids.size() - 1) * V, V), 1e-4);
}

TEST(ForwardTest, BatchedEqualsIncrementalLlama) { CheckBatchedEqualsIncremental({}); }
TEST(ForwardTest, BatchedEqualsIncrementalQwen2Q8) {
  SyntheticSpec s;
  s.arch = "qwen2";
  s.type = GgmlType::kQ8_0;
  CheckBatchedEqualsIncremental(s);
}
TEST(ForwardTest, BatchedEqualsIncrementalGemma3) {
  SyntheticSpec s;
  s.arch = "gemma3";
  s.head_dim = 16;
  s.n_layer = 6;
  s.tied = true;
  CheckBatchedEqualsIncremental(s);
}

// The x8 repack (LoadOptions::repack_x8, the default) covers exactly the
// Q4_0/Q5_0/Q8_0 matrices MatMul reads, and changes the logits by float
// rounding only: the same greedy token at every position.
TEST(ForwardTest, RepackX8MatchesRowMajor) {
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kQ8_0, GgmlType::kF16}) {
    SCOPED_TRACE(std::string(TypeName(type)));
    SyntheticSpec s;
    s.type = type;
    s.n_vocab = 61;  // an output matrix with a padded last group of 8 rows
    auto x8 = LoadSynthetic(s);
    LoadOptions row_major;
    row_major.repack_x8 = false;
    auto rm = LoadSynthetic(s, row_major);
    ASSERT_TRUE(x8.ok() && rm.ok());
    const bool packable = type != GgmlType::kF16;
    const ModelWeights& w = x8->model->weights();
    EXPECT_EQ(w.output.x8 != nullptr, packable);
    EXPECT_EQ(w.layers[0].ffn_down.x8 != nullptr, packable);
    EXPECT_EQ(w.token_embd.x8, nullptr);  // looked up by row, never repacked
    EXPECT_EQ(rm->model->weights().output.x8, nullptr);
    const std::vector<int32_t> ids = {1, 5, 9, 2, 33, 7, 60, 11};
    const int64_t V = s.n_vocab;
    std::vector<float> logits[2];
    for (int i = 0; i < 2; ++i) {
      const Model& model = *(i == 0 ? x8 : rm)->model;
      auto kv = ContiguousKvStorage::Create(model.config(), 16);
      ASSERT_TRUE(kv.ok());
      logits[i] = RunBatch(model, kv->get(), Batch::ForPrompt(ids, 0, 0, true));
      ASSERT_EQ(logits[i].size(), ids.size() * V);
    }
    for (size_t t = 0; t < ids.size(); ++t) {
      const float* a = logits[0].data() + t * V;
      const float* b = logits[1].data() + t * V;
      EXPECT_LT(MaxAbsDiff(a, b, V), 1e-3) << "position " << t;
      EXPECT_EQ(std::max_element(a, a + V) - a, std::max_element(b, b + V) - b) << "position " << t;
    }
  }
}

TEST(ForwardTest, SlidingWindowLimitsReach) {
  // Two local layers with window 4: position p sees inputs back to
  // p - 2 * (4 - 1), so token 0 cannot influence position 7 but does
  // influence position 6.
  SyntheticSpec s;
  s.arch = "gemma3";
  s.n_layer = 2;
  s.sliding_window = 4;
  auto m = LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const int64_t V = m->model->config().n_vocab;
  auto logits_for = [&](int32_t first) {
    auto kv = ContiguousKvStorage::Create(m->model->config(), 16);
    std::vector<int32_t> ids = {first, 5, 9, 2, 33, 7, 60, 11};
    return RunBatch(*m->model, kv->get(), Batch::ForPrompt(ids, 0, 0, true));
  };
  std::vector<float> a = logits_for(1), b = logits_for(40);
  EXPECT_GT(MaxAbsDiff(a.data() + 6 * V, b.data() + 6 * V, V), 1e-4);
  EXPECT_EQ(MaxAbsDiff(a.data() + 7 * V, b.data() + 7 * V, V), 0.0f);
}

TEST(ForwardTest, RejectsBadBatches) {
  auto m = LoadSynthetic({});
  ASSERT_TRUE(m.ok());
  auto kv = ContiguousKvStorage::Create(m->model->config(), 8);
  std::vector<float> logits;
  const Model& model = *m->model;
  EXPECT_FALSE(model.Forward(Batch(), kv->get(), &logits).ok());
  EXPECT_FALSE(model.Forward(Batch::ForPrompt({64}), kv->get(), &logits).ok());
  EXPECT_FALSE(model.Forward(Batch::ForPrompt({-1}), kv->get(), &logits).ok());
  EXPECT_FALSE(model.Forward(Batch::ForPrompt({1, 2}, 3), kv->get(), &logits).ok());
  Batch gap;
  gap.Add(1, 0, 0, true);
  gap.Add(2, 2, 0, true);
  EXPECT_FALSE(model.Forward(gap, kv->get(), &logits).ok());
  Batch two;  // sequence 1 does not exist in a one-sequence cache
  two.Add(1, 0, 0, true);
  two.Add(2, 0, 1, true);
  EXPECT_EQ(model.Forward(two, kv->get(), &logits).code(), StatusCode::kInvalidArgument);
  std::vector<int32_t> nine(9, 1);
  Status s = model.Forward(Batch::ForPrompt(nine), kv->get(), &logits);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ((*kv)->Length(0), 0);
  // Logits only for the positions asked for.
  Batch some;
  some.Add(1, 0, 0, false);
  some.Add(2, 1, 0, true);
  some.Add(3, 2, 0, false);
  ASSERT_TRUE(model.Forward(some, kv->get(), &logits).ok());
  EXPECT_EQ(logits.size(), 64u);
  EXPECT_EQ((*kv)->Length(0), 3);
}

}  // namespace
}  // namespace weft::model
