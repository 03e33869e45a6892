// Speculative decoding with a draft model (SpecMethod::kDraft, the
// DraftProposer) through the engine on stories260K: greedy output equals
// speculation off, alone and batched, chunked, with prefix hits, aborts,
// stops and max_tokens inside accepted runs, for a draft that is the
// target itself (nearly every guess accepted: the drafts are used) and a
// random draft with the same vocabulary (most guesses rolled back); seeded
// sampling equals it too. After every run both the target's and the
// draft's KV blocks are all back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "runtime/draft_proposer.h"
#include "tests/engine/model_harness.h"
#include "tests/engine/test_model.h"
#include "tests/runtime/draft_models.h"

namespace weft::runtime {
namespace {

using engine::FinishReason;
using engine::RequestId;
using engine::SpecMethod;
using engine::TokenId;
using engine::testing::EchoPrompt;
using engine::testing::GreedyJob;
using engine::testing::Job;
using engine::testing::kHi;
using engine::testing::kLo;
using engine::testing::RandomPrompt;
using engine::testing::RunJobs;
using engine::testing::RunResult;
using engine::testing::RunSetup;
using engine::testing::SpecGreedyJobs;

constexpr int kMaxTokens = 40;

class DraftSpecTest : public ::testing::Test {
 protected:
  void SetUp() override {
    target_ = engine::testing::LoadedModel();
    if (target_ == nullptr) GTEST_SKIP() << "no stories260K";
    self_ = testing::LoadShared(testing::StoriesPath());
    const std::string path = testing::WriteDraftModel("random_draft.gguf");
    ASSERT_FALSE(path.empty());
    random_ = testing::LoadShared(path);
    ASSERT_NE(self_, nullptr);
    ASSERT_NE(random_, nullptr);
  }

  // Speculation off, or with a draft proposer over `draft` (kept in
  // *proposer for the checks after the run).
  RunSetup Setup(std::shared_ptr<const model::Model> draft,
                 std::shared_ptr<DraftProposer>* proposer,
                 int draft_blocks = 256) {
    RunSetup s = engine::testing::DefaultSetup();
    if (draft == nullptr) return s;
    s.sched.spec_method = SpecMethod::kDraft;
    s.sched.spec_k_max = 5;
    s.sched.spec_adaptive = false;  // verify every guess
    DraftProposerConfig c;
    c.num_blocks = draft_blocks;
    c.block_size = 16;
    c.kv_type = model::KvType::kF32;
    c.num_threads = 2;
    c.max_token_id = static_cast<int>(target_->config().n_vocab);
    auto p = DraftProposer::Create(std::move(draft), c);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    *proposer = std::shared_ptr<DraftProposer>(std::move(*p));
    s.proposer = *proposer;
    return s;
  }

  const model::Model* target_ = nullptr;
  std::shared_ptr<const model::Model> self_, random_;
};

// Every request finished once, without error, and every block of the
// target's and the draft's KV is back.
void ExpectDone(const RunResult& r, const DraftProposer* p) {
  engine::testing::ExpectFinishedOnce(r);
  if (!r.status.ok()) return;
  EXPECT_EQ(r.kv.num_used, 0);
  if (p != nullptr) {
    EXPECT_EQ(p->kv().stats().num_used, 0);
    EXPECT_EQ(p->kv().num_sequences(), 0);
    EXPECT_EQ(p->stats().failed, 0);
  }
}

TEST_F(DraftSpecTest, GreedyEqualsSpeculationOff) {
  const std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  std::shared_ptr<DraftProposer> none;
  const RunResult ref = RunJobs(*target_, Setup(nullptr, &none), jobs, false);
  ExpectDone(ref, nullptr);
  struct Variant {
    const char* name;
    int chunk;
    bool concurrent;
  };
  for (bool self : {true, false}) {
    SCOPED_TRACE(self ? "draft = target" : "random draft");
    int64_t drafted = 0, accepted = 0;
    for (const Variant& v :
         {Variant{"alone", 0, false}, Variant{"batched", 0, true},
          Variant{"chunked", 7, true}}) {
      SCOPED_TRACE(v.name);
      std::shared_ptr<DraftProposer> p;
      RunSetup s = Setup(self ? self_ : random_, &p);
      s.sched.prefill_chunk = v.chunk;
      const RunResult r = RunJobs(*target_, s, jobs, v.concurrent);
      ExpectDone(r, p.get());
      for (const Job& j : jobs) {
        EXPECT_EQ(r.outcomes.at(j.id).tokens, ref.outcomes.at(j.id).tokens)
            << "request " << j.id;
      }
      drafted += r.stats.spec_num_draft_tokens;
      accepted += r.stats.spec_num_accepted_tokens;
      if (!self) {
        EXPECT_GT(p->stats().rolled_back, 0);
      }
    }
    std::printf("%s: drafted %lld, accepted %lld\n", self ? "self" : "random",
                (long long)drafted, (long long)accepted);
    ASSERT_GT(drafted, 0);
    if (self) {
      // The target's own greedy guesses: all but rounding-level ties hold.
      EXPECT_GE(double(accepted), 0.95 * double(drafted));
    } else {
      EXPECT_LT(accepted, drafted);
    }
  }
}

// Requests sharing a prefix (the target's prefix cache hits; the draft
// catches up on all of it), some aborted, some ended by a stop string
// (Finish(kStop) from the callback) inside accepted runs.
TEST_F(DraftSpecTest, PrefixHitsAbortsAndStopsEqualSpeculationOff) {
  const std::vector<TokenId> prefix = EchoPrompt(7, 40);
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) {
    std::vector<TokenId> p = prefix;
    for (TokenId t : RandomPrompt(60 + i, 1 + i, kLo, kHi)) p.push_back(t);
    jobs.push_back(GreedyJob(20 + i, p, kMaxTokens));
  }
  std::shared_ptr<DraftProposer> none;
  const RunResult ref = RunJobs(*target_, Setup(nullptr, &none), jobs, false);
  ExpectDone(ref, nullptr);
  for (bool self : {true, false}) {
    SCOPED_TRACE(self ? "draft = target" : "random draft");
    std::shared_ptr<DraftProposer> p;
    const RunResult seq =
        RunJobs(*target_, Setup(self ? self_ : random_, &p), jobs, false);
    ExpectDone(seq, p.get());
    EXPECT_GT(seq.kv.prefix_hit_tokens, 0);
    std::vector<Job> ending = jobs;
    for (size_t i = 0; i < ending.size(); i += 3) ending[i].abort_after = 3;
    for (size_t i = 1; i < ending.size(); i += 3) ending[i].stop_after = 5;
    const RunResult conc =
        RunJobs(*target_, Setup(self ? self_ : random_, &p), ending, true);
    ExpectDone(conc, p.get());
    for (const Job& j : ending) {
      const std::vector<TokenId>& want = ref.outcomes.at(j.id).tokens;
      EXPECT_EQ(seq.outcomes.at(j.id).tokens, want) << j.id;
      const std::vector<TokenId>& got = conc.outcomes.at(j.id).tokens;
      if (j.abort_after > 0 || j.stop_after > 0) {
        ASSERT_LE(got.size(), want.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << j.id;
        EXPECT_EQ(conc.outcomes.at(j.id).reason, j.abort_after > 0
                                                     ? FinishReason::kAborted
                                                     : FinishReason::kStop);
      } else {
        EXPECT_EQ(got, want) << j.id;
      }
    }
    EXPECT_GT(seq.stats.spec_num_accepted_tokens, 0);
  }
}

// A stop token and max_tokens inside runs of accepted guesses (the draft
// is the target, so runs are long): nothing past the stop, blocks back.
TEST_F(DraftSpecTest, StopTokenAndMaxTokensInsideAcceptedRuns) {
  std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  std::shared_ptr<DraftProposer> none;
  const RunResult ref = RunJobs(*target_, Setup(nullptr, &none), jobs, false);
  ExpectDone(ref, nullptr);
  for (Job& j : jobs) {
    const std::vector<TokenId>& out = ref.outcomes.at(j.id).tokens;
    if (j.id % 2 == 0 && out.size() > 9) {
      j.stop_token_ids = {out[9]};  // stops at its first occurrence
    } else {
      j.max_tokens = 7 + int(j.id % 5);
    }
  }
  std::shared_ptr<DraftProposer> p;
  const RunResult r = RunJobs(*target_, Setup(self_, &p), jobs, true);
  ExpectDone(r, p.get());
  EXPECT_GT(r.stats.spec_num_accepted_tokens, 0);
  for (const Job& j : jobs) {
    const std::vector<TokenId>& full = ref.outcomes.at(j.id).tokens;
    const std::vector<TokenId>& got = r.outcomes.at(j.id).tokens;
    size_t want = std::min<size_t>(full.size(), size_t(j.max_tokens));
    if (!j.stop_token_ids.empty()) {
      want = size_t(std::find(full.begin(), full.end(), j.stop_token_ids[0]) -
                    full.begin()) +
             1;
    }
    EXPECT_EQ(got,
              std::vector<TokenId>(full.begin(), full.begin() + long(want)))
        << j.id;
  }
}

// Seeded sampling: one draw per emitted token, as without speculation.
TEST_F(DraftSpecTest, SeededSamplingEqualsSpeculationOff) {
  std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].sampling.temperature = 0.7f;
    jobs[i].sampling.seed = 77 + i;
    jobs[i].sampling.top_k = 40;
  }
  std::shared_ptr<DraftProposer> none, p;
  const RunResult ref = RunJobs(*target_, Setup(nullptr, &none), jobs, false);
  const RunResult batch = RunJobs(*target_, Setup(self_, &p), jobs, true);
  ExpectDone(ref, nullptr);
  ExpectDone(batch, p.get());
  for (const Job& j : jobs) {
    EXPECT_EQ(batch.outcomes.at(j.id).tokens, ref.outcomes.at(j.id).tokens)
        << j.id;
  }
  EXPECT_GT(batch.stats.spec_num_accepted_tokens, 0);
}

// A draft KV too small for the prompts: no guesses for those, and the
// output is still the same.
TEST_F(DraftSpecTest, AFullDraftKvOnlyMeansFewerGuesses) {
  const std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  std::shared_ptr<DraftProposer> none, p;
  const RunResult ref = RunJobs(*target_, Setup(nullptr, &none), jobs, false);
  const RunResult r =
      RunJobs(*target_, Setup(self_, &p, /*draft_blocks=*/4), jobs, true);
  ExpectDone(r, p.get());
  for (const Job& j : jobs) {
    EXPECT_EQ(r.outcomes.at(j.id).tokens, ref.outcomes.at(j.id).tokens) << j.id;
  }
  EXPECT_GT(p->stats().no_room, 0);
}

}  // namespace
}  // namespace weft::runtime
