// Speculative decoding in the scheduler, with the fake executor: the
// n-gram proposer, verification's bookkeeping (accepted guesses kept,
// rejected ones truncated from the KV, stops inside an accepted run), the
// per-request opt-out and the load-aware choice of k.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <map>
#include <set>
#include <thread>

#include "engine/proposer.h"
#include "tests/engine/sim.h"

namespace weft::engine {
namespace {

using testing::Kv;
using testing::MaxTokens;
using testing::Prompt;
using testing::Sim;

std::vector<TokenId> Propose(const NgramProposer& p,
                             std::vector<TokenId> tokens, int k) {
  std::vector<TokenId> out = {99};  // replaced
  p.Propose(tokens, k, &out);
  return out;
}

TEST(NgramProposerTest, LongestMatchFirstThenMostRecent) {
  const NgramProposer p(1, 3);
  // "1 2 3" occurs at 0; "3" alone occurs later (at 5) too: the 3-gram wins.
  EXPECT_EQ(Propose(p, {1, 2, 3, 4, 5, 3, 9, 1, 2, 3}, 2),
            (std::vector<TokenId>{4, 5}));
  // Only 1-grams match: the most recent occurrence of 7.
  EXPECT_EQ(Propose(p, {7, 1, 7, 2, 8, 7}, 4), (std::vector<TokenId>{2, 8, 7}));
  // Up to k tokens, and never past the end.
  EXPECT_EQ(Propose(p, {5, 6, 5}, 8), (std::vector<TokenId>{6, 5}));
  EXPECT_TRUE(Propose(p, {1, 2, 3}, 4).empty());  // no earlier occurrence
  EXPECT_TRUE(Propose(p, {1}, 4).empty());
  EXPECT_TRUE(Propose(p, {1, 1}, 0).empty());
  // min_n 2: a lone repeated token is not a match.
  EXPECT_TRUE(Propose(NgramProposer(2, 3), {7, 1, 2, 7}, 4).empty());
}

SchedulerConfig SpecCfg(int k_max, bool adaptive) {
  SchedulerConfig c;
  c.max_batched_tokens = 64;
  c.max_seqs = 8;
  c.prefill_chunk = 16;
  c.idle_prefill_tokens = 0;
  c.spec_method = SpecMethod::kNgram;
  c.spec_k_max = k_max;
  c.spec_adaptive = adaptive;
  c.cost_model_min_samples = 4;
  return c;
}

// Periodic text: every guess after the first period is right; outputs are
// the fake's, blocks come back, and far fewer passes run.
TEST(SpecSchedulerTest, AcceptedRunsEmitSeveralTokensPerPass) {
  for (int k_max : {1, 3, 8}) {
    SCOPED_TRACE(k_max);
    Sim sim(SpecCfg(k_max, false), Kv(64, 4));
    sim.exec().period = 5;
    ASSERT_TRUE(sim.Submit(1, Prompt(0, 10), MaxTokens(40)).ok());
    ASSERT_TRUE(sim.Submit(2, Prompt(3, 7), MaxTokens(33)).ok());
    sim.RunUntilIdle();
    sim.CheckAllDone();
    const SchedulerStats st = sim.sched().stats();
    EXPECT_GT(st.spec_num_accepted_tokens, k_max == 1 ? 20 : 40);
    EXPECT_LE(st.spec_num_accepted_tokens, st.spec_num_draft_tokens);
    EXPECT_LT(sim.steps(), 40 / (k_max > 1 ? 2 : 1) + 5);
    ASSERT_EQ(st.spec_accepted_per_pos.size(), size_t(k_max));
    int64_t sum = 0;
    for (int64_t n : st.spec_accepted_per_pos) sum += n;
    EXPECT_EQ(sum, st.spec_num_accepted_tokens);
    EXPECT_GE(st.spec_accepted_per_pos[0], st.spec_accepted_per_pos.back());
  }
}

// Random text: most guesses are wrong and are rolled back; the KV the next
// passes read still holds exactly the verified tokens (the fake checks it).
TEST(SpecSchedulerTest, RejectedGuessesAreRolledBack) {
  Sim sim(SpecCfg(4, false), Kv(64, 4));
  for (RequestId id = 1; id <= 6; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 12), MaxTokens(30)).ok());
  }
  sim.RunUntilIdle();
  sim.CheckAllDone();
  const SchedulerStats st = sim.sched().stats();
  EXPECT_GT(st.spec_num_draft_tokens - st.spec_num_accepted_tokens, 0);
}

// A stop token, max_tokens or an abort inside an accepted run: nothing
// after the stop is emitted and every block comes back.
TEST(SpecSchedulerTest, StopsInsideAnAcceptedRun) {
  const int period = 6;
  RequestId with_stop = -1;  // its periodic text holds the stop token
  for (RequestId id = 1; id < 5000 && with_stop < 0; ++id) {
    for (int p = 0; p < period; ++p) {
      if (testing::FakeToken(id, p, period) == testing::kFakeStopToken) {
        with_stop = id;
      }
    }
  }
  ASSERT_GT(with_stop, 0);
  Sim sim(SpecCfg(8, false), Kv(64, 4));
  sim.exec().period = period;
  // The stop token comes up in the second period at the latest: inside a
  // run of guesses copied from the first.
  ASSERT_TRUE(sim.Submit(with_stop, Prompt(0, 8),
                         MaxTokens(50, {testing::kFakeStopToken}))
                  .ok());
  ASSERT_TRUE(sim.Submit(100001, Prompt(0, 8), MaxTokens(23)).ok());
  ASSERT_TRUE(sim.Submit(100002, Prompt(0, 9), MaxTokens(50)).ok());
  for (int i = 0; i < 10; ++i) sim.Step();
  ASSERT_TRUE(sim.live().count(100002));
  EXPECT_GT(sim.output(100002).size(), 14u);  // several tokens per pass
  sim.Abort(100002);
  sim.RunUntilIdle();
  sim.CheckAllDone();
  EXPECT_EQ(sim.reason(with_stop), FinishReason::kStop);
  EXPECT_EQ(sim.output(100001).size(), 23u);
  EXPECT_EQ(sim.reason(100002), FinishReason::kAborted);
}

TEST(SpecSchedulerTest, RequestOptOut) {
  Sim sim(SpecCfg(4, false), Kv(64, 4));
  sim.exec().period = 4;
  RequestSpec spec;
  spec.id = 7;
  spec.prompt = Prompt(0, 8);
  spec.stop = MaxTokens(20);
  spec.speculative = false;
  ASSERT_TRUE(sim.SubmitSpec(spec).ok());
  sim.RunUntilIdle();
  sim.CheckAllDone();
  EXPECT_EQ(sim.sched().stats().spec_num_drafts, 0);
  EXPECT_EQ(sim.steps(), 20);  // one pass for the prompt, one per token
}

// The load-aware k: where a pass's fixed cost (reading the weights)
// dominates, guesses are nearly free and are made; where each token costs
// as much as a whole pass's fixed cost per sequence (compute-bound), a
// guess that is right half the time is a loss and none is made.
TEST(SpecSchedulerTest, AdaptiveKFollowsTheCostOfATokenInThePass) {
  for (bool compute_bound : {false, true}) {
    SCOPED_TRACE(compute_bound);
    Sim sim(SpecCfg(6, true), Kv(256, 4));
    sim.exec().period = 5;
    sim.exec().a = compute_bound ? 0.05 : 10.0;
    sim.exec().b = compute_bound ? 1.0 : 0.05;
    for (RequestId id = 1; id <= 8; ++id) {
      ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 12), MaxTokens(40)).ok());
    }
    sim.RunUntilIdle();
    sim.CheckAllDone();
    const SchedulerStats st = sim.sched().stats();
    if (compute_bound) {
      EXPECT_EQ(st.spec_num_draft_tokens, 0);
    } else {
      EXPECT_GT(st.spec_num_accepted_tokens, 8 * 20);
    }
  }
}

// A costly proposer (as a draft model is) that guesses the fake's tokens,
// wrong at every third position; it records what it was asked. Its first
// call takes first_call_ms of wall time; `report` (if set) gives each
// call's timing from the call's number (1, 2, ...) and its most guesses.
class OracleProposer final : public Proposer {
 public:
  void ProposeBatch(std::span<const ProposeRequest> reqs,
                    std::vector<std::vector<TokenId>>* out) override {
    if (calls == 0 && first_call_ms > 0) {
      std::this_thread::sleep_for(
          std::chrono::duration<double, std::milli>(first_call_ms));
    }
    ++calls;
    out->assign(reqs.size(), {});
    int steps = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
      EXPECT_GE(reqs[i].max_k, 1);
      live.insert(reqs[i].id);
      asked += reqs[i].max_k;
      steps = std::max(steps, reqs[i].max_k);
      for (int j = 0; j < reqs[i].max_k; ++j) {
        const int pos = static_cast<int>(reqs[i].tokens.size()) + j;
        const TokenId t = testing::FakeToken(reqs[i].id, pos);
        (*out)[i].push_back(pos % 3 == 0 ? t + 1 : t);
      }
    }
    if (report) timing_ = report(calls, steps);
  }
  void Release(RequestId id) override { live.erase(id); }
  ProposeTiming last_timing() const override { return timing_; }

  double first_call_ms = 0;
  std::function<ProposeTiming(int64_t call, int steps)> report;
  int64_t calls = 0;
  int64_t asked = 0;
  std::set<RequestId> live;

 private:
  ProposeTiming timing_;
};

// Once per pass, for exactly the guesses the pass verifies; Release for
// every request it saw; the output is the fake's.
TEST(SpecSchedulerTest, CostlyProposerIsAskedOncePerPassAndReleased) {
  SchedulerConfig c = SpecCfg(4, false);
  c.spec_method = SpecMethod::kDraft;
  auto p = std::make_shared<OracleProposer>();
  Sim sim(c, Kv(256, 4), p);
  for (RequestId id = 1; id <= 6; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 12), MaxTokens(30)).ok());
  }
  sim.RunUntilIdle();
  sim.CheckAllDone();
  const SchedulerStats st = sim.sched().stats();
  EXPECT_GT(p->calls, 0);
  EXPECT_LE(p->calls, sim.steps());
  EXPECT_EQ(p->asked, st.spec_num_draft_tokens);
  EXPECT_GT(st.spec_num_accepted_tokens, 0);
  EXPECT_LT(st.spec_num_accepted_tokens, st.spec_num_draft_tokens);
  EXPECT_TRUE(p->live.empty());
}

// Adaptive k with a costly proposer on a weight-bound fake (a pass costs
// ~10 ms, a token 0.05 ms): guesses that cost what `p` reports pay.
SchedulerConfig CostlySpecCfg() {
  SchedulerConfig c = SpecCfg(4, true);
  c.spec_method = SpecMethod::kDraft;
  return c;
}
void WeightBound(Sim* sim) {
  sim->exec().a = 10.0;
  sim->exec().b = 0.05;
}

// A draft model's first call for a sequence also catches its KV up with
// the whole prompt: here the first call takes 200 ms of wall time, its
// guess forwards 0.05 ms each. The price of a guess comes from the guess
// forwards alone, so every later pass still drafts (priced from the whole
// call, a guess would cost 50 ms and no pass would draft again).
TEST(SpecSchedulerTest, ACostlyCatchUpDoesNotStopDrafting) {
  auto p = std::make_shared<OracleProposer>();
  p->first_call_ms = 200;
  p->report = [](int64_t call, int steps) {
    ProposeTiming t;
    // The first call's first guess comes from its catch-up forward.
    t.guess_steps = call == 1 ? steps - 1 : steps;
    t.guess_ms = 0.05 * t.guess_steps;
    t.catchup_ms = call == 1 ? 200 : 0.05;
    return t;
  };
  Sim sim(CostlySpecCfg(), Kv(256, 4), p);
  WeightBound(&sim);
  for (RequestId id = 1; id <= 8; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 12), MaxTokens(40)).ok());
  }
  // The passes after the first that drafted, and those that drafted.
  int later = 0, drafting = 0;
  while (sim.sched().HasWork() && sim.steps() < 1000) {
    const int64_t calls = p->calls;
    const StepPlan plan = sim.Step();
    if (calls == 0) continue;
    int drafted = 0;
    for (const ScheduledSeq& s : plan.seqs) drafted += s.num_draft_tokens;
    ++later;
    drafting += drafted > 0;
  }
  sim.CheckAllDone();
  EXPECT_GT(later, 5);
  EXPECT_GE(drafting, later - 2);  // the last sequences may have no room
  EXPECT_GT(sim.sched().stats().spec_num_accepted_tokens, 8 * 15);
}

// A cheap proposer whose first `wrong` proposals for each request miss (an
// answer that opens with its own words) and whose later ones are the
// fake's tokens (the answer then copies its prompt).
class WrongThenRightProposer final : public Proposer {
 public:
  explicit WrongThenRightProposer(int wrong) : wrong_(wrong) {}
  void ProposeBatch(std::span<const ProposeRequest> reqs,
                    std::vector<std::vector<TokenId>>* out) override {
    out->assign(reqs.size(), {});
    for (size_t i = 0; i < reqs.size(); ++i) {
      const bool miss = seen_[reqs[i].id]++ < wrong_;
      for (int j = 0; j < reqs[i].max_k; ++j) {
        const int pos = static_cast<int>(reqs[i].tokens.size()) + j;
        const TokenId t = testing::FakeToken(reqs[i].id, pos);
        (*out)[i].push_back(miss ? t + 1 : t);
      }
    }
  }
  bool cheap() const override { return true; }

 private:
  int wrong_;
  std::map<RequestId, int> seen_;
};

// A sequence whose first guesses all missed is tried again: the adaptive
// choice turns its proposals down while its record is low, and each pass
// that does so ages the record toward the prior, until a pass drafts and
// finds the guesses right. (Without the ageing, a record made by the first
// misses stays and the sequence never drafts again.)
TEST(SpecSchedulerTest, ARequestWhoseFirstGuessesMissedDraftsAgain) {
  auto p = std::make_shared<WrongThenRightProposer>(3);
  Sim sim(CostlySpecCfg(), Kv(256, 4), p);  // kDraft: a given proposer
  sim.exec().a = 1.0;  // compute-bound: a guess costs a third of a pass
  sim.exec().b = 0.5;
  ASSERT_TRUE(sim.Submit(1, Prompt(1, 12), MaxTokens(120)).ok());
  while (sim.sched().HasWork() && sim.steps() < 1000) sim.Step();
  sim.CheckAllDone();
  EXPECT_GT(sim.sched().stats().spec_num_accepted_tokens, 40);
}

// A price that made every k 0 (here the first call's guess forwards took
// 20 ms each) does not stay: while no guess is made it ages, until a pass
// drafts again and measures the cheap forwards; drafting then goes on.
TEST(SpecSchedulerTest, TheDraftPriceRecoversAfterAnExpensiveCall) {
  auto p = std::make_shared<OracleProposer>();
  p->report = [](int64_t call, int steps) {
    ProposeTiming t;
    t.guess_steps = steps;
    t.guess_ms = (call == 1 ? 20.0 : 0.05) * steps;
    return t;
  };
  Sim sim(CostlySpecCfg(), Kv(256, 4), p);
  WeightBound(&sim);
  for (RequestId id = 1; id <= 8; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 12), MaxTokens(100)).ok());
  }
  int quiet = 0;  // passes after the first call without one
  while (sim.sched().HasWork() && sim.steps() < 1000) {
    const int64_t calls = p->calls;
    sim.Step();
    if (calls == 1 && p->calls == 1) ++quiet;
  }
  sim.CheckAllDone();
  EXPECT_GT(quiet, 3);  // the price did stop drafting for a while
  EXPECT_GT(p->calls, 10);
  EXPECT_GT(sim.sched().stats().spec_num_accepted_tokens, 8 * 15);
}

TEST(SpecSchedulerTest, ADraftProposerGoesWithSpecDraftOnly) {
  SchedulerConfig c = SpecCfg(4, false);
  c.spec_method = SpecMethod::kDraft;
  EXPECT_FALSE(Scheduler::Create(c, Kv(64, 4)).ok());
  c.spec_method = SpecMethod::kNgram;
  EXPECT_FALSE(
      Scheduler::Create(c, Kv(64, 4), std::make_shared<OracleProposer>()).ok());
}

}  // namespace
}  // namespace weft::engine
