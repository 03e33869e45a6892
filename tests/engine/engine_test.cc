#include "engine/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "tests/engine/fake_executor.h"

namespace weft::engine {
namespace {

using testing::ExpectedOutput;
using testing::FakeToken;

// The fake model for the threaded engine: no KV check (tokens come from
// the plan), the same deterministic sampling.
class SimpleExecutor : public Executor {
 public:
  std::atomic<int> passes{0};
  std::atomic<bool> fail{false};
  StatusOr<std::vector<SampledToken>> Execute(const StepPlan& plan) override {
    ++passes;
    if (fail) return InternalError("device lost");
    std::vector<SampledToken> out;
    for (const ScheduledSeq& s : plan.seqs) {
      if (s.needs_logits) {
        SampledToken t;
        t.id = s.id;
        t.token = FakeToken(s.id, s.start_pos + s.num_new_tokens);
        out.push_back(std::move(t));
      }
    }
    return out;
  }
};

RequestSpec Spec(RequestId id, std::vector<TokenId> prompt,
                 StopConditions stop) {
  RequestSpec spec;
  spec.id = id;
  spec.prompt = std::move(prompt);
  spec.stop = std::move(stop);
  return spec;
}

struct Collector {
  std::mutex mu;
  std::map<RequestId, std::vector<TokenId>> tokens;
  std::map<RequestId, int> finishes;
  std::map<RequestId, FinishReason> reasons;
  EventCallback For() {
    return [this](const RequestEvent& ev) {
      std::lock_guard<std::mutex> lock(mu);
      auto& t = tokens[ev.id];
      t.insert(t.end(), ev.new_tokens.begin(), ev.new_tokens.end());
      if (ev.finished) {
        ++finishes[ev.id];
        reasons[ev.id] = ev.reason;
      }
    };
  }
};

std::vector<TokenId> Prompt(int n) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(100 + i);
  return p;
}

TEST(EngineTest, ManyThreadsSubmitAndAbort) {
  SchedulerConfig c;
  c.max_batched_tokens = 64;
  c.max_seqs = 8;
  c.prefill_chunk = 16;
  kv::KvCacheConfig k;
  k.num_blocks = 40;
  k.block_size = 4;
  auto exec = std::make_unique<SimpleExecutor>();
  auto engine = Engine::Create(c, k, std::move(exec)).value();
  Collector col;
  constexpr int kThreads = 4, kPerThread = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const RequestId id = t * 1000 + i;
        StopConditions stop;
        stop.max_tokens = 1 + (i % 7);
        RequestSpec spec;
        spec.id = id;
        spec.prompt = Prompt(1 + i % 23);
        spec.stop = stop;
        ASSERT_TRUE(engine->Submit(std::move(spec), col.For()).ok());
        if (i % 5 == 4) (void)engine->Abort(id);  // may have finished
      }
    });
  }
  for (auto& th : threads) th.join();
  engine->WaitUntilIdle();
  std::lock_guard<std::mutex> lock(col.mu);
  for (int t = 0; t < kThreads; ++t) {
    for (int i = 0; i < kPerThread; ++i) {
      const RequestId id = t * 1000 + i;
      EXPECT_EQ(col.finishes[id], 1) << id;
      StopConditions stop;
      stop.max_tokens = 1 + (i % 7);
      auto want = ExpectedOutput(id, 1 + i % 23, stop, c.max_model_len);
      const auto& got = col.tokens[id];
      if (col.reasons[id] == FinishReason::kAborted) {
        ASSERT_LE(got.size(), want.size());
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()));
      } else {
        EXPECT_EQ(col.reasons[id], FinishReason::kLength) << id;
        EXPECT_EQ(got, want) << id;
      }
    }
  }
  const kv::BlockPoolStats st = engine->kv_stats();
  EXPECT_EQ(st.num_used, 0);
  EXPECT_EQ(st.num_free + st.num_idle_cached, st.num_blocks);
}

TEST(EngineTest, FinishFromCallbackStopsAtOnce) {
  // The stop-string hook: the callback decides after 3 tokens.
  EventChannel ch;  // outlives the engine
  auto engine =
      Engine::Create(SchedulerConfig(), kv::KvCacheConfig(),
                     std::make_unique<SimpleExecutor>()).value();
  Engine* e = engine.get();
  int seen = 0;
  StopConditions stop;
  stop.max_tokens = 100;
  ASSERT_TRUE(e->Submit(Spec(1, Prompt(5), stop),
                        [&](const RequestEvent& ev) {
                          seen += static_cast<int>(ev.new_tokens.size());
                          if (seen == 3 && !ev.finished) {
                            EXPECT_TRUE(e->Finish(1, FinishReason::kStop).ok());
                          }
                          ch.Push(ev);
                        }).ok());
  int tokens = 0;
  for (;;) {
    std::optional<RequestEvent> ev = ch.Pop(10000);
    ASSERT_TRUE(ev.has_value());
    tokens += static_cast<int>(ev->new_tokens.size());
    if (ev->finished) {
      EXPECT_EQ(ev->reason, FinishReason::kStop);
      break;
    }
  }
  EXPECT_EQ(tokens, 3);
}

TEST(EngineTest, QueueTimeComesWithTheFinalEventOfScheduledRequests) {
  EventChannel ch;  // outlives the engine
  SchedulerConfig cfg;
  cfg.max_seqs = 1;  // request 2 waits behind request 1
  auto engine = Engine::Create(cfg, kv::KvCacheConfig(),
                               std::make_unique<SimpleExecutor>())
                    .value();
  StopConditions long_run;
  long_run.max_tokens = 1000000;
  auto push = [&](const RequestEvent& ev) { ch.Push(ev); };
  ASSERT_TRUE(engine->Submit(Spec(1, Prompt(5), long_run), push).ok());
  std::optional<RequestEvent> first = ch.Pop(10000);  // 1 is running
  ASSERT_TRUE(first.has_value());
  EXPECT_FALSE(first->queue_seconds.has_value());
  ASSERT_TRUE(engine->Submit(Spec(2, Prompt(5), long_run), push).ok());
  ASSERT_TRUE(engine->Abort(2).ok());  // never scheduled
  ASSERT_TRUE(engine->Abort(1).ok());
  std::map<RequestId, std::optional<double>> final_queue;
  while (final_queue.size() < 2) {
    std::optional<RequestEvent> ev = ch.Pop(10000);
    ASSERT_TRUE(ev.has_value());
    if (!ev->finished) {
      EXPECT_FALSE(ev->queue_seconds.has_value());
      continue;
    }
    final_queue[ev->id] = ev->queue_seconds;
  }
  ASSERT_TRUE(final_queue[1].has_value());
  EXPECT_GE(*final_queue[1], 0.0);
  EXPECT_FALSE(final_queue[2].has_value());
}

TEST(EngineTest, ExecutorErrorFailsTheRequestsNotTheEngine) {
  auto exec = std::make_unique<SimpleExecutor>();
  SimpleExecutor* raw = exec.get();
  EventChannel ch;  // outlives the engine
  auto engine =
      Engine::Create(SchedulerConfig(), kv::KvCacheConfig(), std::move(exec))
          .value();
  raw->fail = true;
  ASSERT_TRUE(engine->Submit(Spec(1, Prompt(5), {}),
                             [&](const RequestEvent& ev) { ch.Push(ev); })
                  .ok());
  std::optional<RequestEvent> ev = ch.Pop(10000);
  ASSERT_TRUE(ev.has_value());
  EXPECT_TRUE(ev->finished);
  EXPECT_EQ(ev->reason, FinishReason::kError);
  EXPECT_NE(ev->error.find("device lost"), std::string::npos);
  raw->fail = false;
  ASSERT_TRUE(engine->Submit(Spec(2, Prompt(5), {}),
                             [&](const RequestEvent& ev) { ch.Push(ev); })
                  .ok());
  engine->WaitUntilIdle();
  EXPECT_EQ(engine->stats().num_finished, 2);
}

TEST(EngineTest, ShutdownAbortsLiveRequests) {
  Collector col;
  {
    SchedulerConfig c;
    c.max_seqs = 1;
    c.max_batched_tokens = 8;
    auto engine = Engine::Create(c, kv::KvCacheConfig(),
                                 std::make_unique<SimpleExecutor>())
                      .value();
    StopConditions stop;
    stop.max_tokens = 1000000;
    for (RequestId id = 0; id < 3; ++id) {
      ASSERT_TRUE(engine->Submit(Spec(id, Prompt(3), stop), col.For()).ok());
    }
    EXPECT_EQ(engine->Submit(Spec(0, Prompt(3), stop), col.For()).code(),
              StatusCode::kInvalidArgument);
  }
  std::lock_guard<std::mutex> lock(col.mu);
  for (RequestId id = 0; id < 3; ++id) {
    EXPECT_EQ(col.finishes[id], 1);
    EXPECT_TRUE(col.reasons[id] == FinishReason::kAborted ||
                col.reasons[id] == FinishReason::kLength);
  }
}

}  // namespace
}  // namespace weft::engine
