// Multi-sequence (varlen) batches: a batch mixing sequences — some with
// prefill chunks, some with one decode token — must give every sequence
// bitwise the same logits as running it alone. Every step of the forward
// pass is per token or a dot of one token row with one weight/cache row
// (int8 activation quantization is per row too), so the summation order
// does not depend on the batch and equality is exact, for every KV storage
// type (f32, f16, q8_0: a row is converted the same way whatever the batch).
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <map>

#include "kernels/isa.h"
#include "model/model.h"
#include "tests/model/synthetic.h"

namespace weft::model {
namespace {

// One sequence's part of a step: tokens appended at its current length.
struct Chunk {
  int32_t seq;
  std::vector<int32_t> tokens;
};

// Runs `steps` once as mixed batches (chunks of a step in one Forward, the
// tokens of different sequences interleaved) and once per sequence alone,
// and compares the logits of every token.
void CheckMixedEqualsAlone(const Model& model, const std::vector<std::vector<Chunk>>& steps,
                           const kernels::KernelTable& table, KvType kv_type) {
  SCOPED_TRACE(std::string(table.name) + ", KV " + KvTypeName(kv_type));
  const int64_t V = model.config().n_vocab;
  ForwardOptions opts;
  opts.n_threads = 2;
  opts.kernels = &table;
  auto mixed_kv = ContiguousKvStorage::Create(model.config(), 64, 4, kv_type);
  ASSERT_TRUE(mixed_kv.ok());
  std::map<int32_t, std::unique_ptr<ContiguousKvStorage>> alone_kv;
  std::map<int32_t, int32_t> length;
  for (size_t si = 0; si < steps.size(); ++si) {
    SCOPED_TRACE("step " + std::to_string(si));
    // Mixed: round-robin over the chunks so sequences interleave.
    Batch mixed;
    std::vector<std::pair<int32_t, size_t>> order;  // (chunk, token) per row
    size_t longest = 0;
    for (const Chunk& c : steps[si]) longest = std::max(longest, c.tokens.size());
    for (size_t i = 0; i < longest; ++i) {
      for (size_t ci = 0; ci < steps[si].size(); ++ci) {
        const Chunk& c = steps[si][ci];
        if (i >= c.tokens.size()) continue;
        mixed.Add(c.tokens[i], length[c.seq] + static_cast<int32_t>(i), c.seq, true);
        order.push_back({static_cast<int32_t>(ci), i});
      }
    }
    std::vector<float> mixed_logits;
    Status s = model.Forward(mixed, mixed_kv->get(), &mixed_logits, opts);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(mixed_logits.size(), mixed.size() * V);
    for (size_t ci = 0; ci < steps[si].size(); ++ci) {
      const Chunk& c = steps[si][ci];
      auto& kv = alone_kv[c.seq];
      if (kv == nullptr) {
        auto created = ContiguousKvStorage::Create(model.config(), 64, 1, kv_type);
        ASSERT_TRUE(created.ok());
        kv = std::move(*created);
      }
      std::vector<float> alone;
      s = model.Forward(Batch::ForPrompt(c.tokens, length[c.seq], 0, true), kv.get(), &alone,
                        opts);
      ASSERT_TRUE(s.ok()) << s.ToString();
      for (size_t row = 0; row < order.size(); ++row) {
        if (order[row].first != static_cast<int32_t>(ci)) continue;
        const size_t i = order[row].second;
        EXPECT_EQ(std::memcmp(mixed_logits.data() + row * V, alone.data() + i * V,
                              V * sizeof(float)), 0)
            << "sequence " << c.seq << " token " << i;
      }
    }
    for (const Chunk& c : steps[si]) length[c.seq] += static_cast<int32_t>(c.tokens.size());
  }
  for (const auto& [seq, n] : length) EXPECT_EQ((*mixed_kv)->Length(seq), n);
}

// Prefill chunks and decode tokens of 3 sequences, mixed in every way.
std::vector<std::vector<Chunk>> Steps(int32_t vocab) {
  auto t = [vocab](std::initializer_list<int32_t> ids) {
    std::vector<int32_t> v;
    for (int32_t id : ids) v.push_back(id % vocab);
    return v;
  };
  return {
      {{0, t({1, 5, 9, 2, 33, 7})}},                     // one prefill
      {{0, t({11})}, {1, t({3, 4, 60, 8})}},             // decode + prefill
      {{1, t({12})}, {0, t({13})}, {2, t({2, 2, 40})}},  // 2 decodes + prefill
      {{2, t({50, 51, 52, 53, 54})}, {0, t({14})}, {1, t({15})}},  // chunk + decodes
      {{0, t({16})}, {1, t({17})}, {2, t({18})}},        // pure decode
  };
}

void CheckModel(const Model& model) {
  // Every KV storage type the model's rows fit (Q8_0: multiples of 32).
  for (KvType type : {KvType::kF32, KvType::kF16, KvType::kQ8_0}) {
    if (!CheckKvType(type, model.config()).ok()) continue;
    for (kernels::Isa isa : kernels::SupportedIsas()) {
      CheckMixedEqualsAlone(model, Steps(static_cast<int32_t>(model.config().n_vocab)),
                            kernels::GetKernels(isa), type);
    }
  }
}

TEST(MixedBatchTest, SyntheticLlama) {
  auto m = testing::LoadSynthetic({});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CheckModel(*m->model);
}

TEST(MixedBatchTest, SyntheticGemma3Q8) {
  testing::SyntheticSpec s;
  s.arch = "gemma3";
  s.head_dim = 16;
  s.n_layer = 6;
  s.tied = true;
  s.type = GgmlType::kQ8_0;
  auto m = testing::LoadSynthetic(s);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CheckModel(*m->model);
}

// Mixture of experts: the tokens of a batch are grouped by expert, and a
// sequence's logits must still not depend on what else is in the batch.
// Q8_0 (x8-repacked experts, int8 activations) and Q4_0.
TEST(MixedBatchTest, SyntheticQwen3Moe) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    testing::SyntheticSpec s;
    s.arch = "qwen3moe";
    s.n_embd = 64;
    s.head_dim = 16;
    s.n_ff = 32;
    s.n_expert = 6;
    s.n_expert_used = 2;
    s.type = type;
    auto m = testing::LoadSynthetic(s);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    CheckModel(*m->model);
  }
}

// The newer families: q/k norms (qwen3), soft-capping and alternating
// windows (gemma2), fused views (phi3).
TEST(MixedBatchTest, SyntheticNewArchsQ8) {
  for (const char* arch : {"qwen3", "gemma2", "phi3"}) {
    SCOPED_TRACE(arch);
    testing::SyntheticSpec s;
    s.arch = arch;
    s.n_layer = 3;
    s.type = GgmlType::kQ8_0;
    auto m = testing::LoadSynthetic(s);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    CheckModel(*m->model);
  }
}

// gpt-oss: sinks, biases, a sliding window of 4 on even layers (the steps
// cross it), YaRN, top-k-then-softmax routing, the clamped SwiGLU. All
// Q8_0, and as gpt-oss files are: MXFP4 experts (x8-repacked slices) with
// the rest Q8_0.
TEST(MixedBatchTest, SyntheticGptOss) {
  for (GgmlType expert_type : {GgmlType::kQ8_0, GgmlType::kMXFP4}) {
    SCOPED_TRACE(TypeName(expert_type));
    testing::SyntheticSpec s;
    s.arch = "gpt-oss";
    s.n_embd = 64;
    s.head_dim = 16;
    s.n_ff = 32;
    s.n_layer = 2;
    s.type = GgmlType::kQ8_0;
    s.expert_type = expert_type;
    auto m = testing::LoadSynthetic(s);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    CheckModel(*m->model);
  }
}

TEST(MixedBatchTest, Stories260K) {
  const std::string path = std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
  if (!std::ifstream(path).good()) GTEST_SKIP() << "no " << path;
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CheckModel(**m);
}

TEST(MixedBatchTest, DefaultModel) {
  const std::string path = WEFT_GEMMA_MODEL;
  if (!std::ifstream(path).good()) GTEST_SKIP() << "no " << path;
  auto m = Model::Load(path);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  CheckModel(**m);
}

TEST(MixedBatchTest, RejectsBadMultiSequenceBatches) {
  auto m = testing::LoadSynthetic({});
  ASSERT_TRUE(m.ok());
  auto kv = ContiguousKvStorage::Create(m->model->config(), 8, 2);
  ASSERT_TRUE(kv.ok());
  std::vector<float> logits;
  Batch gap;  // sequence 1 skips a position
  gap.Add(1, 0, 0, true);
  gap.Add(1, 0, 1, true);
  gap.Add(2, 1, 0, true);
  gap.Add(2, 2, 1, true);
  EXPECT_EQ(m->model->Forward(gap, kv->get(), &logits).code(), StatusCode::kInvalidArgument);
  Batch late;  // sequence 1 starts past its cached length
  late.Add(1, 0, 0, true);
  late.Add(1, 3, 1, true);
  EXPECT_EQ(m->model->Forward(late, kv->get(), &logits).code(), StatusCode::kInvalidArgument);
  Batch full;  // sequence 1 overflows the cache; nothing is committed
  full.Add(1, 0, 0, true);
  for (int i = 0; i < 9; ++i) full.Add(1, i, 1, false);
  EXPECT_EQ(m->model->Forward(full, kv->get(), &logits).code(),
            StatusCode::kResourceExhausted);
  EXPECT_EQ((*kv)->Length(0), 0);
  EXPECT_EQ((*kv)->Length(1), 0);
}

}  // namespace
}  // namespace weft::model
