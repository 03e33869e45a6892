// KV cache groups on Gemma 3 style models (sliding-window layers next to
// full-attention layers): with a local block group, blocks that fall out of
// the window are released during the run, and the tokens and logits equal a
// run that keeps every block (one group), with f32 and f16 storage, with
// prefix-cache hits (which need the local group's blocks of the last window
// tokens) and with a local pool so small that cached local blocks get
// evicted. Drives the Scheduler and the ModelExecutor step by step to watch
// the block tables.
//
// Compiled twice: a synthetic 6-layer gemma3 (window 8; label unit) and,
// with WEFT_KV_WINDOW_GEMMA, the default Gemma 3 270M (window 512, a
// 600-token prompt; label e2e).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/model_executor.h"
#include "engine/scheduler.h"
#include "model/model.h"
#include "tests/model/synthetic.h"

namespace weft::engine {
namespace {

#ifdef WEFT_KV_WINDOW_GEMMA
constexpr bool kGemma = true;
#else
constexpr bool kGemma = false;
#endif

// Prompt lengths and block size: the prompt runs well past the window.
constexpr int kBlockSize = kGemma ? 8 : 2;
constexpr int kPromptLen = kGemma ? 600 : 40;
constexpr int kMaxTokens = kGemma ? 16 : 24;

struct Holder {
  model::testing::SyntheticModel synthetic;
  std::unique_ptr<model::Model> loaded;
  const model::Model* get() const {
    return loaded ? loaded.get() : synthetic.model.get();
  }
};

const model::Model* TheModel() {
  static Holder* h = [] {
    auto* holder = new Holder;
    if (kGemma) {
      struct stat st;
      if (::stat(WEFT_GEMMA_MODEL, &st) != 0) return holder;
      auto m = model::Model::Load(WEFT_GEMMA_MODEL);
      if (m.ok()) holder->loaded = std::move(*m);
    } else {
      model::testing::SyntheticSpec s;
      s.arch = "gemma3";
      s.n_embd = 64;
      s.n_head = 4;
      s.n_head_kv = 2;
      s.head_dim = 16;  // K, V rows of 32: q8_0 fits too
      s.n_layer = 6;    // layers 0-4 windowed, 5 global
      s.n_vocab = 96;
      s.sliding_window = 8;
      s.tied = true;
      auto m = model::testing::LoadSynthetic(s);
      if (m.ok()) holder->synthetic = std::move(*m);
    }
    return holder;
  }();
  return h->get();
}

std::vector<TokenId> Prompt(uint64_t seed, int n, TokenId lo, TokenId hi) {
  std::vector<TokenId> p;
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 99;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p.push_back(lo + static_cast<TokenId>(x % static_cast<uint64_t>(hi - lo)));
  }
  return p;
}

struct Result {
  std::map<RequestId, std::vector<TokenId>> tokens;
  std::map<RequestId, std::vector<std::vector<float>>> logits;  // per token
  std::map<RequestId, int> cached;     // prompt tokens served by the cache
  int max_local_used = 0;              // local blocks in use, at most
  int max_nulls = 0;                   // released entries seen in a table
  int64_t local_evictions = 0;
};

struct KvSetup {
  bool split = true;           // a local group for the windowed layers
  int local_blocks = 0;        // 0: enough
  model::KvType type = model::KvType::kF32;
  int prefill_chunk = 0;
};

// Runs the prompts one after the other (each after the previous finished,
// so later ones can hit the prefix cache), greedy.
Result RunPrompts(const model::Model& m, const KvSetup& setup,
           const std::vector<std::vector<TokenId>>& prompts) {
  Result res;
  const int window = static_cast<int>(m.config().sliding_window);
  SchedulerConfig sc;
  sc.max_batched_tokens = 1024;
  sc.max_seqs = 4;
  sc.prefill_chunk = setup.prefill_chunk;
  sc.idle_prefill_tokens = 0;  // chunks as configured, even alone
  sc.max_model_len = 4096;
  kv::KvCacheConfig kv;
  kv.block_size = kBlockSize;
  kv.num_blocks = 4 * (kPromptLen + kMaxTokens + 64) / kBlockSize;
  if (setup.split) {
    kv.local_window = window;
    kv.local_num_blocks = setup.local_blocks > 0 ? setup.local_blocks
                                                 : kv.num_blocks;
  }
  ModelExecutorConfig ec;
  ec.num_threads = kGemma ? 2 : 1;  // tiny model: no pool overhead
  ec.kv_type = setup.type;
  ec.logits_observer = [&res](RequestId id, int, std::span<const float> l) {
    res.logits[id].emplace_back(l.begin(), l.end());
  };
  auto sched_or = Scheduler::Create(sc, kv);
  EXPECT_TRUE(sched_or.ok()) << sched_or.status().ToString();
  auto exec_or = CreateModelExecutor(&m, kv, ec);
  EXPECT_TRUE(exec_or.ok()) << exec_or.status().ToString();
  if (!sched_or.ok() || !exec_or.ok()) return res;
  Scheduler& sched = **sched_or;
  Executor& exec = **exec_or;
  RequestId id = 0;
  for (const std::vector<TokenId>& p : prompts) {
    RequestSpec spec;
    spec.id = ++id;
    spec.prompt = p;
    spec.stop.max_tokens = kMaxTokens;
    spec.sampling.temperature = 0;
    EXPECT_TRUE(sched.Submit(std::move(spec)).ok());
    while (sched.HasWork()) {
      StepPlan plan = sched.Schedule();
      if (plan.empty()) break;
      auto out = exec.Execute(plan);
      EXPECT_TRUE(out.ok()) << out.status().ToString();
      if (!out.ok()) return res;
      sched.Update(plan, *out);
      for (const RequestEvent& ev : sched.TakeEvents()) {
        EXPECT_NE(ev.reason, FinishReason::kError) << ev.error;
        auto& t = res.tokens[ev.id];
        t.insert(t.end(), ev.new_tokens.begin(), ev.new_tokens.end());
        res.cached[ev.id] = ev.num_cached_tokens;
      }
      if (sched.kv().num_groups() > 1) {
        const kv::KvCacheManager& km = sched.kv();
        res.max_local_used = std::max(
            res.max_local_used,
            static_cast<int>(km.pool(kv::kLocalGroup).stats().num_used));
        if (const kv::BlockTable* t = km.Table(id, kv::kLocalGroup)) {
          res.max_nulls = std::max(
              res.max_nulls, static_cast<int>(std::count(
                                 t->blocks.begin(), t->blocks.end(),
                                 kv::kNullBlock)));
        }
        EXPECT_TRUE(km.CheckInvariants().ok());
      }
    }
  }
  if (sched.kv().num_groups() > 1) {
    res.local_evictions = sched.kv().pool(kv::kLocalGroup).stats().evictions;
  }
  EXPECT_EQ(sched.kv().stats().num_used, 0);
  return res;
}

float MaxDiff(const Result& a, const Result& b) {
  float d = 0;
  for (const auto& [id, rows] : a.logits) {
    const auto& other = b.logits.at(id);
    EXPECT_EQ(rows.size(), other.size());
    for (size_t i = 0; i < std::min(rows.size(), other.size()); ++i) {
      for (size_t j = 0; j < rows[i].size(); ++j) {
        d = std::max(d, std::fabs(rows[i][j] - other[i][j]));
      }
    }
  }
  return d;
}

#define REQUIRE_MODEL()                                         \
  const model::Model* model = TheModel();                       \
  if (model == nullptr) GTEST_SKIP() << "no model";             \
  const TokenId lo = kGemma ? 300 : 3;                          \
  const TokenId hi = kGemma ? 60000 : 90;

// One long sequence: local blocks out of the window are released, and the
// result is bitwise the one-group run's (same reads, same order).
TEST(KvWindowTest, LocalBlocksReleasedAndOutputUnchanged) {
  REQUIRE_MODEL();
  const int window = static_cast<int>(model->config().sliding_window);
  ASSERT_LT(window, kPromptLen);
  const std::vector<std::vector<TokenId>> prompts = {
      Prompt(1, kPromptLen, lo, hi)};
  for (model::KvType type : {model::KvType::kF32, model::KvType::kF16}) {
    SCOPED_TRACE(model::KvTypeName(type));
    KvSetup one;
    one.split = false;
    one.type = type;
    KvSetup two = one;
    two.split = true;
    const Result a = RunPrompts(*model, one, prompts);
    const Result b = RunPrompts(*model, two, prompts);
    ASSERT_EQ(a.tokens.at(1).size(), static_cast<size_t>(kMaxTokens));
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_EQ(a.logits, b.logits);  // bitwise
    // Past the window: the leading local blocks were released, and the
    // local group never held much more than a window's worth per pass.
    const int total = kPromptLen + kMaxTokens;
    EXPECT_GE(b.max_nulls, (total - window) / kBlockSize - 1);
    std::printf("%s: local blocks released %d of %d, max local in use %d\n",
                model::KvTypeName(type), b.max_nulls,
                (total + kBlockSize - 1) / kBlockSize, b.max_local_used);
  }
}

// Chunked prefill with a local group: the chunks attend across released
// blocks' boundaries; tokens equal the unchunked one-group run.
TEST(KvWindowTest, ChunkedPrefillWithLocalGroup) {
  REQUIRE_MODEL();
  const std::vector<std::vector<TokenId>> prompts = {
      Prompt(2, kPromptLen, lo, hi)};
  KvSetup ref;
  ref.split = false;
  const Result a = RunPrompts(*model, ref, prompts);
  for (int chunk : kGemma ? std::vector<int>{64} : std::vector<int>{1, 7, 64}) {
    SCOPED_TRACE(chunk);
    KvSetup s;
    s.prefill_chunk = chunk;
    const Result b = RunPrompts(*model, s, prompts);
    EXPECT_EQ(a.tokens, b.tokens);
    EXPECT_LE(MaxDiff(a, b), 2e-3f);
    EXPECT_GT(b.max_nulls, 0);
  }
}

// Prefix hits across the window: B extends A's prompt (hit needs the local
// blocks of A's last window tokens), C shares A's first part. With a tiny
// local pool the released local blocks are evicted and hits shrink; the
// output never changes.
TEST(KvWindowTest, PrefixHitsWithLocalGroup) {
  REQUIRE_MODEL();
  const int window = static_cast<int>(model->config().sliding_window);
  std::vector<TokenId> a = Prompt(3, kPromptLen, lo, hi);
  std::vector<TokenId> b = a;
  for (TokenId t : Prompt(4, 5, lo, hi)) b.push_back(t);
  std::vector<TokenId> c(a.begin(), a.begin() + kPromptLen / 2);
  for (TokenId t : Prompt(5, 7, lo, hi)) c.push_back(t);
  const std::vector<std::vector<TokenId>> prompts = {a, b, c};
  KvSetup ref;
  ref.split = false;
  const Result r = RunPrompts(*model, ref, prompts);
  EXPECT_GT(r.cached.at(2), window);
  KvSetup big;
  const Result x = RunPrompts(*model, big, prompts);
  EXPECT_EQ(x.tokens, r.tokens);
  EXPECT_LE(MaxDiff(x, r), 2e-3f);
  // Enough local blocks: B's hit is as long as with one group.
  EXPECT_EQ(x.cached.at(2), r.cached.at(2));
  // A local pool for one sequence's window plus a chunk: A's early local
  // blocks are evicted by its own later ones, so C's hit (half of A) loses
  // the local blocks it needs and shrinks.
  KvSetup tiny;
  tiny.prefill_chunk = kGemma ? 32 : 4;
  tiny.local_blocks =
      (window - 1 + tiny.prefill_chunk + kBlockSize - 1) / kBlockSize + 3;
  const Result y = RunPrompts(*model, tiny, prompts);
  EXPECT_EQ(y.tokens, r.tokens);
  EXPECT_LE(MaxDiff(y, r), 2e-3f);
  EXPECT_GT(y.local_evictions, 0);
  EXPECT_LT(y.cached.at(3), r.cached.at(3));
  std::printf("hits one group %d/%d, local group %d/%d, tiny local pool "
              "%d/%d (local evictions %lld)\n",
              r.cached.at(2), r.cached.at(3), x.cached.at(2), x.cached.at(3),
              y.cached.at(2), y.cached.at(3), (long long)y.local_evictions);
}

TEST(KvWindowTest, Q8KvRunsAndMostlyAgrees) {
  REQUIRE_MODEL();
  if (!model::CheckKvType(model::KvType::kQ8_0, model->config()).ok()) {
    GTEST_SKIP() << "rows do not fit q8_0";
  }
  // A random phrase repeated: the model copies, so its next token is
  // predicted sharply (after plain random tokens the top logits lie within
  // the q8_0 keys' error, and which of them wins is chance).
  const std::vector<TokenId> phrase = Prompt(6, 25, lo, hi);
  std::vector<TokenId> repeated;
  while (repeated.size() + phrase.size() <= static_cast<size_t>(kPromptLen)) {
    repeated.insert(repeated.end(), phrase.begin(), phrase.end());
  }
  const std::vector<std::vector<TokenId>> prompts = {repeated};
  KvSetup f;
  KvSetup q;
  q.type = model::KvType::kQ8_0;
  const Result a = RunPrompts(*model, f, prompts);
  const Result b = RunPrompts(*model, q, prompts);
  ASSERT_EQ(b.tokens.at(1).size(), static_cast<size_t>(kMaxTokens));
  // Quantized keys move logits a little; the sharply predicted first
  // token agrees, and with a clear margin under both KV types.
  EXPECT_EQ(a.tokens.at(1)[0], b.tokens.at(1)[0]);
  const std::vector<float>& la = a.logits.at(1)[0];
  const std::vector<float>& lb = b.logits.at(1)[0];
  float d = 0;
  for (size_t i = 0; i < la.size(); ++i) d = std::max(d, std::fabs(la[i] - lb[i]));
  auto margin = [](std::vector<float> l) {  // top logit minus the second
    std::partial_sort(l.begin(), l.begin() + 2, l.end(), std::greater<float>());
    return l[0] - l[1];
  };
  EXPECT_LT(d, margin(la)) << "the agreement would be chance";
  std::printf("q8_0 vs f32 KV: first token's max |logit diff| %g, top-2 margins %g / %g\n",
              d, margin(la), margin(lb));
}

}  // namespace
}  // namespace weft::engine
