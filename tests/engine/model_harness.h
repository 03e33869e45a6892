// Test harness for the engine over a real model: runs a set of requests
// through an Engine with the ModelExecutor, all at once (concurrently) or
// one at a time, and collects every request's events.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "engine/model_executor.h"
#include "model/model.h"

namespace weft::engine::testing {

inline bool FileExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// One request of a test.
struct Job {
  RequestId id = 0;
  std::vector<TokenId> prompt;
  int max_tokens = 16;
  sampling::SamplingParams sampling;  // set greedy by GreedyJob
  int abort_after = -1;  // > 0: Abort() once this many tokens arrived
  // > 0: Finish(kStop) once this many tokens arrived (what a stop string
  // matched in the text does).
  int stop_after = -1;
  int prompt_logprobs = -1;  // RequestSpec::prompt_logprobs
  std::vector<TokenId> stop_token_ids;  // StopConditions::stop_token_ids
};

// What a request produced.
struct Outcome {
  std::vector<TokenId> tokens;
  std::vector<float> logprobs;
  std::vector<std::vector<std::pair<TokenId, float>>> top_logprobs;
  FinishReason reason = FinishReason::kNone;
  std::string error;
  int num_finishes = 0;
  int num_cached_tokens = 0;
  std::vector<PromptTokenLogprob> prompt_logprobs;  // prompt tokens 1, 2, ...
};

// Everything one engine run needs.
struct RunSetup {
  SchedulerConfig sched;
  kv::KvCacheConfig kv;
  ModelExecutorConfig exec;
  // SpecMethod::kDraft's proposer (EngineOptions::proposer); else null.
  std::shared_ptr<Proposer> proposer;
};

inline RunSetup DefaultSetup() {
  RunSetup s;
  s.sched.max_batched_tokens = 1024;
  s.sched.max_seqs = 16;
  s.sched.prefill_chunk = 0;
  s.sched.idle_prefill_tokens = 0;  // chunks as configured, even alone
  s.sched.max_model_len = 512;
  s.kv.num_blocks = 256;
  s.kv.block_size = 16;
  s.exec.num_threads = 2;
  return s;
}

// `n` deterministic pseudo-random token ids in [lo, hi) (xorshift64 from
// seed * golden ratio + salt; a different salt, a different sequence).
inline std::vector<TokenId> RandomPrompt(uint64_t seed, int n, TokenId lo,
                                         TokenId hi, uint64_t salt = 12345) {
  std::vector<TokenId> p;
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + salt;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    p.push_back(lo + static_cast<TokenId>(x % static_cast<uint64_t>(hi - lo)));
  }
  return p;
}

inline Job GreedyJob(RequestId id, std::vector<TokenId> prompt,
                     int max_tokens) {
  Job j;
  j.id = id;
  j.prompt = std::move(prompt);
  j.max_tokens = max_tokens;
  j.sampling.temperature = 0.0f;
  return j;
}

struct RunResult {
  std::map<RequestId, Outcome> outcomes;
  SchedulerStats stats;
  kv::BlockPoolStats kv;
  Status status;  // first Submit error, if any
};

// Every request of `r` submitted, finished exactly once and not in error.
inline void ExpectFinishedOnce(const RunResult& r) {
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  for (const auto& [id, o] : r.outcomes) {
    EXPECT_EQ(o.num_finishes, 1) << "request " << id;
    EXPECT_NE(o.reason, FinishReason::kError) << id << ": " << o.error;
  }
}

// Runs `jobs` through one engine. concurrent: everything is submitted at
// once (from two threads); else one request at a time, waiting for each.
inline RunResult RunJobs(const model::Model& model, const RunSetup& setup,
                         const std::vector<Job>& jobs, bool concurrent) {
  RunResult res;
  auto exec = CreateModelExecutor(&model, setup.kv, setup.exec);
  if (!exec.ok()) {
    res.status = exec.status();
    return res;
  }
  EngineOptions options;
  options.proposer = setup.proposer;
  auto engine_or =
      Engine::Create(setup.sched, setup.kv, std::move(*exec), options);
  if (!engine_or.ok()) {
    res.status = engine_or.status();
    return res;
  }
  std::unique_ptr<Engine> engine = std::move(*engine_or);
  std::mutex mu;
  for (const Job& j : jobs) res.outcomes[j.id];
  auto submit = [&](const Job& j) {
    RequestSpec spec;
    spec.id = j.id;
    spec.prompt = j.prompt;
    spec.stop.max_tokens = j.max_tokens;
    spec.stop.stop_token_ids = j.stop_token_ids;
    spec.sampling = j.sampling;
    spec.prompt_logprobs = j.prompt_logprobs;
    Engine* e = engine.get();
    const int abort_after = j.abort_after;
    const int stop_after = j.stop_after;
    Status st = engine->Submit(std::move(spec), [&, e, abort_after, stop_after](
                                                    const RequestEvent& ev) {
      bool abort = false, stop = false;
      {
        std::lock_guard<std::mutex> lock(mu);
        Outcome& o = res.outcomes[ev.id];
        o.tokens.insert(o.tokens.end(), ev.new_tokens.begin(),
                        ev.new_tokens.end());
        o.logprobs.insert(o.logprobs.end(), ev.logprobs.begin(),
                          ev.logprobs.end());
        o.top_logprobs.insert(o.top_logprobs.end(), ev.top_logprobs.begin(),
                              ev.top_logprobs.end());
        o.num_cached_tokens = ev.num_cached_tokens;
        o.prompt_logprobs.insert(o.prompt_logprobs.end(),
                                 ev.prompt_logprobs.begin(),
                                 ev.prompt_logprobs.end());
        if (ev.finished) {
          ++o.num_finishes;
          o.reason = ev.reason;
          o.error = ev.error;
        }
        abort = !ev.finished && abort_after > 0 &&
                static_cast<int>(o.tokens.size()) >= abort_after;
        stop = !ev.finished && stop_after > 0 &&
               static_cast<int>(o.tokens.size()) >= stop_after;
      }
      if (abort) (void)e->Abort(ev.id);
      if (stop) (void)e->Finish(ev.id, FinishReason::kStop);
    });
    std::lock_guard<std::mutex> lock(mu);
    if (!st.ok() && res.status.ok()) res.status = st;
  };
  if (concurrent) {
    std::thread other([&] {
      for (size_t i = 1; i < jobs.size(); i += 2) submit(jobs[i]);
    });
    for (size_t i = 0; i < jobs.size(); i += 2) submit(jobs[i]);
    other.join();
    engine->WaitUntilIdle();
  } else {
    for (const Job& j : jobs) {
      submit(j);
      engine->WaitUntilIdle();
    }
  }
  res.stats = engine->stats();
  res.kv = engine->kv_stats();
  return res;
}

}  // namespace weft::engine::testing
