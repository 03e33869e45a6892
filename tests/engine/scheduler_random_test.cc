// Randomised scheduling: random configs, arrivals, aborts and KV pressure
// (hence preemptions) over thousands of seeds. Every pass is checked by the
// Sim (budget, decode-maximal, KV contents via the fake executor); at the
// end every request finished exactly once with exactly its tokens and every
// KV block is back in the pool.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "tests/engine/sim.h"

namespace weft::engine {
namespace {

using testing::Prompt;
using testing::Sim;

// What the seeds exercised, summed: the test insists on each path.
struct Coverage {
  int64_t preemptions = 0, prefix_hit_tokens = 0, evictions = 0, errors = 0,
          aborts = 0, rejected = 0, windowed = 0, finished = 0, local = 0,
          local_hit_tokens = 0, local_evictions = 0, spec_accepted = 0,
          spec_rejected = 0;
};

void RunSeed(unsigned seed, Coverage* cov) {
  std::mt19937 rng(seed);
  auto pick = [&rng](int lo, int hi) {  // inclusive
    return lo + static_cast<int>(rng() % static_cast<unsigned>(hi - lo + 1));
  };
  SchedulerConfig c;
  c.max_seqs = pick(1, 6);
  c.max_batched_tokens = c.max_seqs + pick(0, 40);
  c.prefill_chunk = pick(0, 3) == 0 ? 0 : pick(1, 24);
  c.idle_prefill_tokens = pick(0, 1) == 0 ? 0 : pick(1, 64);
  c.enable_prefix_caching = pick(0, 2) != 0;
  c.max_queue = 64;
  c.max_model_len = pick(16, 80);
  kv::KvCacheConfig k;
  k.block_size = pick(1, 8);
  k.num_blocks = pick(2, 40);
  const int window_kind = pick(0, 4);  // 0: windowed group 0, 1: local group
  k.sliding_window = window_kind == 0 ? pick(4, 20) : 0;
  if (window_kind == 1) {
    k.local_window = pick(2, 20);
    k.local_num_blocks = pick(2, 40);
  }
  // Speculation (a third of the seeds), on periodic fake text that the
  // n-gram proposer guesses (or on random text, where it mostly misses).
  const bool spec = pick(0, 2) == 0;
  if (spec) {
    c.spec_method = SpecMethod::kNgram;
    c.spec_k_max = pick(1, 6);
    c.spec_adaptive = false;
  }
  Sim sim(c, k);
  if (spec) sim.exec().period = pick(0, 3) == 0 ? 0 : pick(2, 9);

  const int num_requests = pick(1, 12);
  RequestId next = 0;
  int submitted = 0;
  for (int step = 0; step < 2000; ++step) {
    if (submitted < num_requests && pick(0, 2) == 0) {
      StopConditions stop;
      stop.max_tokens = pick(1, 20);
      if (pick(0, 1)) stop.stop_token_ids = {testing::kFakeStopToken};
      stop.min_tokens = pick(0, 2);
      // Shared prompt starts so that prefix caching hits. Some are too long
      // for the context or the cache and are rejected.
      std::vector<TokenId> prompt = Prompt(pick(0, 2) * 50, pick(1, 40));
      Status s = sim.Submit(next++, prompt, stop, pick(0, 5) == 0 ? -1 : 0);
      ++submitted;  // rejected ones (too large for the cache) count too
      if (!s.ok()) {
        EXPECT_TRUE(s.code() == StatusCode::kResourceExhausted ||
                    s.code() == StatusCode::kInvalidArgument)
            << s.ToString();
        ++cov->rejected;
      }
    }
    if (!sim.live().empty() && pick(0, 25) == 0) {
      auto it = sim.live().begin();
      std::advance(it, pick(0, static_cast<int>(sim.live().size()) - 1));
      sim.Abort(*it);
      ++cov->aborts;
    }
    if (submitted == num_requests && !sim.sched().HasWork()) break;
    sim.Step();
    if (::testing::Test::HasFailure()) return;
  }
  sim.RunUntilIdle(5000);
  sim.CheckAllDone();
  const SchedulerStats st = sim.sched().stats();
  const kv::BlockPoolStats kst = sim.sched().kv().stats();
  cov->preemptions += st.num_preemptions;
  cov->finished += st.num_finished;
  cov->prefix_hit_tokens += kst.prefix_hit_tokens;
  cov->evictions += kst.evictions;
  cov->windowed += k.sliding_window > 0 ? 1 : 0;
  cov->spec_accepted += st.spec_num_accepted_tokens;
  cov->spec_rejected += st.spec_num_draft_tokens - st.spec_num_accepted_tokens;
  if (k.local_num_blocks > 0) {
    ++cov->local;
    cov->local_hit_tokens += kst.prefix_hit_tokens;
    cov->local_evictions += sim.sched().kv().pool(kv::kLocalGroup).stats().evictions;
  }
  for (RequestId id = 0; id < next; ++id) {
    if (sim.finishes(id) && sim.reason(id) == FinishReason::kError) {
      ++cov->errors;
    }
  }
}

TEST(SchedulerRandomTest, ThousandsOfSeedsLeakNothing) {
  Coverage cov;
  for (unsigned seed = 1; seed <= 3000; ++seed) {
    RunSeed(seed, &cov);
    if (HasFailure()) {
      ADD_FAILURE() << "first failing seed: " << seed;
      return;
    }
  }
  std::printf("finished %lld, preemptions %lld, prefix hit tokens %lld, "
              "evictions %lld, errors %lld, aborts %lld, rejected %lld, "
              "windowed seeds %lld, local-group seeds %lld (hit tokens %lld, "
              "local evictions %lld), drafts accepted %lld rejected %lld\n",
              (long long)cov.finished, (long long)cov.preemptions,
              (long long)cov.prefix_hit_tokens, (long long)cov.evictions,
              (long long)cov.errors, (long long)cov.aborts,
              (long long)cov.rejected, (long long)cov.windowed,
              (long long)cov.local, (long long)cov.local_hit_tokens,
              (long long)cov.local_evictions, (long long)cov.spec_accepted,
              (long long)cov.spec_rejected);
  EXPECT_GT(cov.preemptions, 0);
  EXPECT_GT(cov.prefix_hit_tokens, 0);
  EXPECT_GT(cov.evictions, 0);
  EXPECT_GT(cov.errors, 0);
  EXPECT_GT(cov.aborts, 0);
  EXPECT_GT(cov.windowed, 0);
  EXPECT_GT(cov.local, 0);
  EXPECT_GT(cov.local_hit_tokens, 0);
  EXPECT_GT(cov.local_evictions, 0);
  EXPECT_GT(cov.spec_accepted, 0);
  EXPECT_GT(cov.spec_rejected, 0);
}

}  // namespace
}  // namespace weft::engine
