#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include "tests/engine/sim.h"

namespace weft::engine {
namespace {

using testing::ExpectedOutput;
using testing::Kv;
using testing::MaxTokens;
using testing::Prompt;
using testing::Sim;


// idle_prefill_tokens 0: passes without decodes keep to `budget` and
// `chunk` too, unless a test turns the idle budget on.
SchedulerConfig Cfg(int budget, int seqs, int chunk, bool prefix = true,
                    int idle = 0) {
  SchedulerConfig c;
  c.idle_prefill_tokens = idle;
  c.max_batched_tokens = budget;
  c.max_seqs = seqs;
  c.prefill_chunk = chunk;
  c.enable_prefix_caching = prefix;
  return c;
}


// A request that reports its prompt's logprobs with `top` alternatives.
RequestSpec ScoringSpec(RequestId id, std::vector<TokenId> prompt,
                        int max_tokens, int top) {
  RequestSpec spec;
  spec.id = id;
  spec.prompt = std::move(prompt);
  spec.stop = MaxTokens(max_tokens);
  spec.prompt_logprobs = top;
  return spec;
}

TEST(SchedulerConfigTest, Validate) {
  EXPECT_TRUE(SchedulerConfig().Validate().ok());
  EXPECT_FALSE(Cfg(8, 16, 0).Validate().ok());  // budget < max_seqs
  EXPECT_FALSE(Cfg(8, 0, 0).Validate().ok());
  EXPECT_FALSE(Cfg(64, 4, -1).Validate().ok());
  EXPECT_FALSE(Scheduler::Create(Cfg(8, 16, 0), Kv(4)).ok());
  EXPECT_FALSE(Scheduler::Create(SchedulerConfig(), Kv(0)).ok());
}

TEST(SchedulerTest, SubmitRejectsBadRequests) {
  SchedulerConfig c = Cfg(64, 4, 16);
  c.max_queue = 2;
  c.max_model_len = 100;
  Sim sim(c, Kv(4, 16));
  EXPECT_EQ(sim.Submit(1, {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(sim.Submit(1, Prompt(0, 100)).code(),
            StatusCode::kInvalidArgument);  // no room in the context
  EXPECT_EQ(sim.Submit(1, Prompt(0, 64)).code(),
            StatusCode::kResourceExhausted);  // larger than the whole cache
  EXPECT_EQ(sim.Submit(1, Prompt(0, 5), MaxTokens(0)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(sim.Submit(1, Prompt(0, 5)).ok());
  EXPECT_EQ(sim.Submit(1, Prompt(0, 5)).code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(sim.Submit(2, Prompt(0, 5)).ok());
  EXPECT_EQ(sim.Submit(3, Prompt(0, 5)).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(sim.sched().Abort(42).code(), StatusCode::kNotFound);
}

TEST(SchedulerTest, PrefillThenDecodeOneTokenPerPass) {
  Sim sim(Cfg(64, 4, 0), Kv(16, 4));
  ASSERT_TRUE(sim.Submit(7, Prompt(0, 10), MaxTokens(5)).ok());
  StepPlan p1 = sim.Step();
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].start_pos, 0);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 10);
  EXPECT_TRUE(p1.seqs[0].needs_logits);
  EXPECT_EQ(p1.seqs[0].block_table.size(), 3u);
  for (int i = 0; i < 4; ++i) {
    StepPlan p = sim.Step();
    ASSERT_EQ(p.seqs.size(), 1u);
    EXPECT_EQ(p.seqs[0].start_pos, 10 + i);
    EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
    EXPECT_EQ(p.seqs[0].tokens[0], sim.output(7)[static_cast<size_t>(i)]);
  }
  EXPECT_FALSE(sim.sched().HasWork());
  EXPECT_EQ(sim.reason(7), FinishReason::kLength);
  EXPECT_EQ(sim.output(7).size(), 5u);
  // The next plan the engine executes reports it for per-sequence clean-up
  // (an empty one keeps it: see FreedIdsWaitForTheNextExecutedPlan).
  EXPECT_TRUE(sim.sched().Schedule().freed.empty());
  ASSERT_TRUE(sim.Submit(8, Prompt(3, 4), MaxTokens(1)).ok());
  EXPECT_EQ(sim.Step().freed, std::vector<RequestId>{7});
  sim.CheckAllDone();
}

TEST(SchedulerTest, ChunkedPrefillOnlyLastChunkNeedsLogits) {
  Sim sim(Cfg(64, 4, 16), Kv(16, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 40), MaxTokens(2)).ok());
  std::vector<int> chunks;
  for (int i = 0; i < 3; ++i) {
    StepPlan p = sim.Step();
    ASSERT_EQ(p.seqs.size(), 1u);
    chunks.push_back(p.seqs[0].num_new_tokens);
    EXPECT_EQ(p.seqs[0].needs_logits, i == 2);
  }
  EXPECT_EQ(chunks, (std::vector<int>{16, 16, 8}));
  sim.RunUntilIdle();
  sim.CheckAllDone();
}

TEST(SchedulerTest, IdlePassesTakeTheIdleBudgetUntilADecodeRuns) {
  // Budget 8 / chunk 4 while anything decodes; 32 without a decode.
  Sim sim(Cfg(8, 4, 4, true, /*idle=*/32), Kv(64, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(1, 70), MaxTokens(3)).ok());
  // Alone: 32 + 32 + 6 prompt tokens, the last pass samples.
  StepPlan p1 = sim.Step();
  EXPECT_EQ(p1.budget, 32);
  ASSERT_EQ(p1.seqs.size(), 1u);
  EXPECT_EQ(p1.seqs[0].num_new_tokens, 32);
  StepPlan p2 = sim.Step();
  EXPECT_EQ(p2.seqs[0].num_new_tokens, 32);
  StepPlan p3 = sim.Step();
  EXPECT_EQ(p3.seqs[0].num_new_tokens, 6);
  EXPECT_TRUE(p3.seqs[0].needs_logits);
  // Request 1 decodes now: a new prompt gets the tight budget around it.
  ASSERT_TRUE(sim.Submit(2, Prompt(100, 40), MaxTokens(2)).ok());
  StepPlan p4 = sim.Step();
  EXPECT_EQ(p4.budget, 8);
  ASSERT_EQ(p4.seqs.size(), 2u);
  EXPECT_EQ(p4.seqs[0].id, 1);
  EXPECT_EQ(p4.seqs[0].num_new_tokens, 1);
  EXPECT_EQ(p4.seqs[1].num_new_tokens, 4);
  // The stats count each pass's own budget (32 + 32 + 32 + 8 so far).
  EXPECT_EQ(sim.sched().stats().num_budget_tokens, 104);
  sim.RunUntilIdle();
  EXPECT_EQ(sim.output(1).size(), 3u);
  EXPECT_EQ(sim.output(2).size(), 2u);
  sim.CheckAllDone();
}

TEST(SchedulerTest, StopConditions) {
  SchedulerConfig c = Cfg(64, 8, 0);
  c.max_model_len = 30;
  Sim sim(c, Kv(64, 4));
  // A request whose fake output contains the stop token early enough.
  RequestId with_stop = -1;
  for (RequestId id = 1; id < 1000 && with_stop < 0; ++id) {
    for (int i = 1; i < 10; ++i) {
      if (testing::FakeToken(id, 10 + i) == testing::kFakeStopToken) {
        with_stop = id;
        break;
      }
    }
  }
  ASSERT_GT(with_stop, 0);
  StopConditions stop = MaxTokens(50, {testing::kFakeStopToken});
  ASSERT_TRUE(sim.Submit(with_stop, Prompt(0, 10), stop).ok());
  StopConditions ignore = stop;
  ignore.min_tokens = 50;  // stop ids ignored: runs into the context end
  ASSERT_TRUE(sim.Submit(with_stop + 1000000, Prompt(0, 10), ignore).ok());
  ASSERT_TRUE(sim.Submit(3000000, Prompt(0, 10), MaxTokens(3)).ok());
  sim.RunUntilIdle();
  EXPECT_EQ(sim.reason(with_stop), FinishReason::kStop);
  EXPECT_EQ(sim.output(with_stop).back(), testing::kFakeStopToken);
  EXPECT_EQ(sim.reason(with_stop + 1000000), FinishReason::kLength);
  EXPECT_EQ(sim.output(with_stop + 1000000).size(), 20u);  // 30 - 10
  EXPECT_EQ(sim.output(3000000).size(), 3u);
  sim.CheckAllDone();
}

TEST(SchedulerTest, LongPromptNeverDelaysRunningDecodes) {
  // 8 requests decoding; a 2048-token prompt arrives. Every pass still
  // carries all 8 decodes, and no pass is longer than one chunk's.
  SchedulerConfig c = Cfg(512, 16, 256);
  Sim sim(c, Kv(512, 16));
  for (RequestId id = 0; id < 8; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id) * 7, 20), MaxTokens(100)).ok());
  }
  sim.Step();  // all 8 prefills in one pass
  for (int i = 0; i < 3; ++i) sim.Step();
  ASSERT_TRUE(sim.Submit(99, Prompt(5000, 2048), MaxTokens(4)).ok());
  const double max_pass = sim.exec().a + sim.exec().b * (8 + 256);
  int prompt_passes = 0;
  while (sim.first_step(99) < 0 || sim.output(99).empty()) {
    const double before = sim.exec().time;
    StepPlan p = sim.Step();
    EXPECT_LE(sim.exec().time - before, max_pass + 1e-9);
    int decodes = 0;
    for (const ScheduledSeq& s : p.seqs) {
      if (s.id == 99) {
        EXPECT_LE(s.num_new_tokens, 256);
        ++prompt_passes;
      } else {
        EXPECT_EQ(s.num_new_tokens, 1);
        ++decodes;
      }
    }
    EXPECT_EQ(decodes, 8);
  }
  EXPECT_EQ(prompt_passes, 8);  // 2048 / 256
  sim.RunUntilIdle();
  sim.CheckAllDone();
}

TEST(SchedulerTest, SeveralPromptsShareAPass) {
  Sim sim(Cfg(100, 8, 0), Kv(64, 4));
  for (RequestId id = 0; id < 4; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(0, 30), MaxTokens(3)).ok());
  }
  StepPlan p = sim.Step();
  ASSERT_EQ(p.seqs.size(), 4u);  // 30 + 30 + 30 + 10 (a chunk)
  EXPECT_EQ(p.num_batched_tokens, 100);
  EXPECT_EQ(p.seqs[3].num_new_tokens, 10);
  EXPECT_FALSE(p.seqs[3].needs_logits);
  sim.RunUntilIdle();
  sim.CheckAllDone();
}

TEST(SchedulerTest, FcfsAdmissionAndPriorityClasses) {
  SchedulerConfig cfg = Cfg(64, 2, 0);
  cfg.policy = SchedulingPolicy::kPriority;
  Sim sim(cfg, Kv(64, 4));
  for (RequestId id = 0; id < 6; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id), 8), MaxTokens(3)).ok());
  }
  ASSERT_TRUE(sim.Submit(100, Prompt(0, 8), MaxTokens(3), /*priority=*/-1).ok());
  sim.RunUntilIdle();
  // Admitted in arrival order (the higher class first), two at a time.
  for (RequestId id = 1; id < 6; ++id) {
    EXPECT_LE(sim.first_step(id - 1), sim.first_step(id));
  }
  EXPECT_LE(sim.first_step(100), sim.first_step(0));
  sim.CheckAllDone();
}

TEST(SchedulerTest, SiblingsWaitWhereTheirFirstChoiceDid) {
  // One sequence runs at a time; requests 2 and 3 arrive while 1 runs, then
  // 1's second choice (n = 2, submitted after 1's first token) comes: it
  // goes before them, and the full queue does not refuse it.
  SchedulerConfig c = Cfg(64, 1, 0);
  c.max_queue = 2;
  Sim sim(c, Kv(64, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 8), MaxTokens(3)).ok());
  sim.Step();
  ASSERT_TRUE(sim.Submit(2, Prompt(1, 8), MaxTokens(3)).ok());
  ASSERT_TRUE(sim.Submit(3, Prompt(2, 8), MaxTokens(3)).ok());
  EXPECT_EQ(sim.Submit(5, Prompt(3, 8), MaxTokens(3)).code(),
            StatusCode::kResourceExhausted);
  ASSERT_TRUE(sim.Submit(4, Prompt(0, 8), MaxTokens(3), 0, /*sibling_of=*/1).ok());
  sim.RunUntilIdle();
  EXPECT_LT(sim.first_step(4), sim.first_step(2));
  EXPECT_LT(sim.first_step(2), sim.first_step(3));
  sim.CheckAllDone();
}

TEST(SchedulerTest, PromptLogprobsCoverThePromptOnceInOrder) {
  // 10 prompt tokens in chunks of 4: tokens 1..9 get logprobs (token 0 has
  // no context), from positions 0..8, chunk by chunk. The same prompt was
  // cached before: this request computes it anyway.
  SchedulerConfig c = Cfg(64, 4, 8);
  c.prompt_logprobs_chunk = 4;  // not 8: each position takes a logits row
  Sim sim(c, Kv(64, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 10), MaxTokens(2)).ok());
  sim.RunUntilIdle();
  ASSERT_TRUE(sim.SubmitSpec(ScoringSpec(2, Prompt(0, 10), 3, 2)).ok());
  StepPlan p = sim.Step();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].start_pos, 0);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 4);
  EXPECT_EQ(p.seqs[0].prompt_logprobs_from, 0);
  EXPECT_EQ(p.seqs[0].prompt_targets.size(), 4u);
  EXPECT_EQ(p.seqs[0].prompt_logprobs_top, 2);
  sim.RunUntilIdle();
  const std::vector<TokenId> prompt = Prompt(0, 10);
  EXPECT_EQ(sim.prompt_logprob_tokens(2),
            std::vector<TokenId>(prompt.begin() + 1, prompt.end()));
  EXPECT_TRUE(sim.prompt_logprob_tokens(1).empty());
  sim.CheckAllDone();
}

TEST(SchedulerTest, PromptLogprobRowsAreCappedPerPass) {
  // Two scoring requests of 12 tokens with 6 logits rows per pass in all:
  // the first takes them; the second waits for the next pass.
  SchedulerConfig c = Cfg(64, 4, 16);
  c.prompt_logprobs_chunk = 6;
  Sim sim(c, Kv(64, 4));
  for (RequestId id = 1; id <= 2; ++id) {
    ASSERT_TRUE(
        sim.SubmitSpec(ScoringSpec(id, Prompt(int(id) * 20, 12), 1, 0)).ok());
  }
  StepPlan p = sim.Step();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 6);
  sim.RunUntilIdle();
  for (RequestId id = 1; id <= 2; ++id) {
    EXPECT_EQ(sim.prompt_logprob_tokens(id).size(), 11u);
  }
  sim.CheckAllDone();
}

TEST(SchedulerTest, PromptLogprobsAreNotRepeatedAfterAPreemption) {
  // As PreemptsMostRecentAndRecomputesWithoutReemitting: every request is
  // preempted at some point and recomputes its prompt.
  Sim sim(Cfg(64, 4, 4, /*prefix=*/false), Kv(9, 4));
  for (RequestId id = 0; id < 3; ++id) {
    ASSERT_TRUE(
        sim.SubmitSpec(ScoringSpec(id, Prompt(int(id) * 10, 8), 10, 0)).ok());
  }
  sim.RunUntilIdle();
  EXPECT_GE(sim.sched().stats().num_preemptions, 1);
  for (RequestId id = 0; id < 3; ++id) {
    const std::vector<TokenId> prompt = Prompt(int(id) * 10, 8);
    EXPECT_EQ(sim.prompt_logprob_tokens(id),
              std::vector<TokenId>(prompt.begin() + 1, prompt.end()));
  }
  sim.CheckAllDone();
}

TEST(SchedulerTest, HeadOfLineBlocksAdmission) {
  // The head needs more blocks than are free: later small ones wait (FCFS).
  Sim sim(Cfg(256, 8, 0), Kv(12, 4));
  ASSERT_TRUE(sim.Submit(0, Prompt(0, 30), MaxTokens(4)).ok());  // 8 blocks
  sim.Step();
  ASSERT_TRUE(sim.Submit(1, Prompt(1, 20), MaxTokens(2)).ok());  // 5 blocks
  ASSERT_TRUE(sim.Submit(2, Prompt(2, 2), MaxTokens(2)).ok());   // 1 block
  StepPlan p = sim.Step();
  EXPECT_EQ(p.seqs.size(), 1u);
  sim.RunUntilIdle();
  EXPECT_LT(sim.first_step(1), sim.first_step(2) + 1);
  sim.CheckAllDone();
}

TEST(SchedulerTest, FinishedRequestsRecycleBlocksForTheNextPass) {
  Sim sim(Cfg(64, 4, 0), Kv(4, 4));
  ASSERT_TRUE(sim.Submit(0, Prompt(0, 12), MaxTokens(2)).ok());  // 4 blocks
  ASSERT_TRUE(sim.Submit(1, Prompt(1, 12), MaxTokens(2)).ok());
  sim.Step();                   // 0 prefills (+ its first token)
  sim.Step();                   // 0 decodes its 2nd token and finishes
  EXPECT_EQ(sim.reason(0), FinishReason::kLength);
  StepPlan p = sim.Step();      // 1 takes the room at once
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].id, 1);
  sim.RunUntilIdle();
  sim.CheckAllDone();
}

TEST(SchedulerTest, PrefixCacheSkipsCachedTokens) {
  Sim sim(Cfg(256, 4, 0), Kv(64, 16));
  std::vector<TokenId> system = Prompt(0, 64);
  std::vector<TokenId> a = system, b = system;
  a.push_back(1);
  b.push_back(2);
  ASSERT_TRUE(sim.Submit(1, a, MaxTokens(2)).ok());
  sim.RunUntilIdle();
  ASSERT_TRUE(sim.Submit(2, b, MaxTokens(2)).ok());
  StepPlan p = sim.Step();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].start_pos, 64);
  EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
  // The whole prompt cached: still one token is computed for the logits.
  ASSERT_TRUE(sim.Submit(3, system, MaxTokens(2)).ok());
  p = sim.Step();
  bool found = false;
  for (const ScheduledSeq& s : p.seqs) {
    if (s.id == 3) {
      found = true;
      EXPECT_EQ(s.start_pos, 48);
      EXPECT_EQ(s.num_new_tokens, 16);
    }
  }
  EXPECT_TRUE(found);
  sim.RunUntilIdle();
  EXPECT_EQ(sim.cached_tokens(2), 64);
  EXPECT_EQ(sim.cached_tokens(3), 48);
  const kv::BlockPoolStats st = sim.sched().kv().pool().stats();
  EXPECT_EQ(st.prefix_hit_tokens, 64 + 48);
  sim.CheckAllDone();
}

TEST(SchedulerTest, PrefixCacheOffComputesEverything) {
  Sim sim(Cfg(256, 4, 0, /*prefix=*/false), Kv(64, 16));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 65), MaxTokens(2)).ok());
  sim.RunUntilIdle();
  ASSERT_TRUE(sim.Submit(2, Prompt(0, 65), MaxTokens(2)).ok());
  StepPlan p = sim.Step();
  EXPECT_EQ(p.seqs[0].start_pos, 0);
  sim.RunUntilIdle();
  EXPECT_EQ(sim.sched().kv().pool().stats().num_idle_cached, 0);
  sim.CheckAllDone();
}

TEST(SchedulerTest, PreemptsMostRecentAndRecomputesWithoutReemitting) {
  // 3 requests, 9 blocks of 4: they cannot all grow to 12+ tokens.
  Sim sim(Cfg(64, 4, 0, /*prefix=*/false), Kv(9, 4));
  for (RequestId id = 0; id < 3; ++id) {
    ASSERT_TRUE(sim.Submit(id, Prompt(int(id) * 10, 8), MaxTokens(10)).ok());
  }
  std::vector<RequestId> preempted;
  for (int i = 0; i < 200 && sim.sched().HasWork(); ++i) {
    StepPlan p = sim.Step();
    preempted.insert(preempted.end(), p.preempted.begin(), p.preempted.end());
  }
  ASSERT_FALSE(preempted.empty());
  EXPECT_EQ(preempted[0], 2);  // the most recently admitted goes first
  EXPECT_GE(sim.sched().stats().num_preemptions, 1);
  sim.CheckAllDone();  // exact outputs: nothing lost, nothing repeated
  for (RequestId id = 0; id < 3; ++id) {
    EXPECT_EQ(sim.reason(id), FinishReason::kLength);
    EXPECT_EQ(sim.output(id).size(), 10u);
  }
}

TEST(SchedulerTest, PreemptsTheLowestPriorityClassFirst) {
  // 12 blocks of 4: a priority-5 request runs first; a priority-0 one
  // arrives later. When they outgrow the cache, the priority-5 one yields,
  // however recently the other was admitted.
  SchedulerConfig cfg = Cfg(16, 4, 8, /*prefix=*/false);
  cfg.policy = SchedulingPolicy::kPriority;
  Sim sim(cfg, Kv(12, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 4), MaxTokens(30), /*priority=*/5).ok());
  sim.Step();
  ASSERT_TRUE(sim.Submit(2, Prompt(50, 16), MaxTokens(30), /*priority=*/0).ok());
  std::vector<RequestId> preempted;
  for (int i = 0; i < 400 && sim.sched().HasWork(); ++i) {
    StepPlan p = sim.Step();
    preempted.insert(preempted.end(), p.preempted.begin(), p.preempted.end());
  }
  ASSERT_FALSE(preempted.empty());
  for (RequestId id : preempted) EXPECT_EQ(id, 1);
  sim.CheckAllDone();
}

// A request finished while nothing else runs (a stop string found by the
// server, say) leaves an empty plan, which the engine does not execute: its
// id reaches the executor (which drops its sampler) with the next plan.
TEST(SchedulerTest, FreedIdsWaitForTheNextExecutedPlan) {
  Sim sim(Cfg(64, 4, 0), Kv(16, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 5), MaxTokens(50)).ok());
  sim.Step();
  ASSERT_TRUE(sim.sched().Finish(1, FinishReason::kStop).ok());
  StepPlan idle = sim.sched().Schedule();
  EXPECT_TRUE(idle.empty());
  EXPECT_TRUE(idle.freed.empty());
  ASSERT_TRUE(sim.Submit(2, Prompt(9, 5), MaxTokens(2)).ok());
  StepPlan p = sim.Step();
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.freed, (std::vector<RequestId>{1}));
  sim.RunUntilIdle();
}

TEST(SchedulerTest, RequestLargerThanTheCacheFailsInsteadOfDeadlocking) {
  Sim sim(Cfg(64, 4, 0), Kv(4, 4));  // 16 token slots in all
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 10), MaxTokens(100)).ok());
  ASSERT_TRUE(sim.Submit(2, Prompt(1, 3), MaxTokens(2)).ok());
  sim.RunUntilIdle(1000);
  EXPECT_EQ(sim.reason(1), FinishReason::kError);
  EXPECT_NE(sim.error(1).find("KV cache alone"), std::string::npos);
  EXPECT_EQ(sim.reason(2), FinishReason::kLength);
  sim.CheckAllDone();
}

TEST(SchedulerTest, AbortInEveryState) {
  Sim sim(Cfg(32, 2, 8), Kv(32, 4));
  ASSERT_TRUE(sim.Submit(0, Prompt(0, 30), MaxTokens(50)).ok());  // prefilling
  ASSERT_TRUE(sim.Submit(1, Prompt(1, 4), MaxTokens(50)).ok());   // decoding
  ASSERT_TRUE(sim.Submit(2, Prompt(2, 4), MaxTokens(50)).ok());   // waiting
  sim.Step();
  sim.Step();
  ASSERT_EQ(sim.sched().Find(0)->status, RequestStatus::kRunning);
  ASSERT_LT(sim.sched().Find(0)->num_computed_tokens, 30);
  ASSERT_EQ(sim.sched().Find(2)->status, RequestStatus::kWaiting);
  sim.Abort(0);
  sim.Abort(2);
  EXPECT_EQ(sim.reason(0), FinishReason::kAborted);
  EXPECT_EQ(sim.reason(2), FinishReason::kAborted);
  // Aborted between Schedule and Update: the result is dropped.
  StepPlan p = sim.sched().Schedule();
  ASSERT_FALSE(p.empty());
  sim.Abort(1);
  sim.sched().Update(p, *sim.exec().Execute(p));
  EXPECT_TRUE(sim.sched().TakeEvents().empty());
  EXPECT_EQ(sim.sched().Abort(1).code(), StatusCode::kNotFound);
  sim.CheckAllDone();
}

TEST(SchedulerTest, SlidingWindowReleasesBlocksWhileDecoding) {
  Sim sim(Cfg(64, 4, 0, /*prefix=*/false), Kv(8, 4, /*window=*/8));
  // 8 blocks = 32 slots, but with an 8-token window a 60-token life fits.
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 12), MaxTokens(48)).ok());
  sim.RunUntilIdle();
  EXPECT_EQ(sim.reason(1), FinishReason::kLength);
  EXPECT_EQ(sim.output(1).size(), 48u);
  sim.CheckAllDone();
}


TEST(SchedulerTest, PreemptedRequestResumesFromItsCachedBlocks) {
  // 16 slots for two requests that grow to 8 and 9 tokens: the later one
  // is preempted, and its full blocks stay in the prefix cache. When the
  // other finishes, it comes back with all but its last token cached: a
  // one-token decode, admitted into a pass that had no running decode and
  // so holds the idle budget (the engine trace test relies on this case).
  Sim sim(Cfg(8, 4, 4, true, /*idle=*/32), Kv(4, 4));
  ASSERT_TRUE(sim.Submit(1, Prompt(0, 4), MaxTokens(5)).ok());
  ASSERT_TRUE(sim.Submit(2, Prompt(100, 5), MaxTokens(5)).ok());
  StepPlan p = sim.Step();
  EXPECT_EQ(p.budget, 32);  // both prompts, nothing decodes yet
  for (int i = 0; i < 3; ++i) {
    p = sim.Step();
    EXPECT_EQ(p.budget, 8);
    EXPECT_EQ(p.seqs.size(), 2u);
  }
  p = sim.Step();  // request 1's fifth token needs a block: 2 goes
  ASSERT_EQ(p.preempted, (std::vector<RequestId>{2}));
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].id, 1);
  EXPECT_EQ(sim.reason(1), FinishReason::kLength);
  p = sim.Step();
  EXPECT_EQ(p.budget, 32);
  ASSERT_EQ(p.seqs.size(), 1u);
  EXPECT_EQ(p.seqs[0].id, 2);
  EXPECT_TRUE(p.seqs[0].admitted);
  EXPECT_EQ(p.seqs[0].start_pos, 8);  // 5 prompt + 4 generated, 8 cached
  EXPECT_EQ(p.seqs[0].num_new_tokens, 1);
  EXPECT_TRUE(p.seqs[0].needs_logits);
  sim.RunUntilIdle();
  EXPECT_EQ(sim.output(2).size(), 5u);
  sim.CheckAllDone();  // nothing lost, nothing repeated
}
}  // namespace
}  // namespace weft::engine
