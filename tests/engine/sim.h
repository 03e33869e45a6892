// Test harness: a Scheduler driven synchronously with the FakeExecutor, plus
// the checks every pass must satisfy. Records what each client would see.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "engine/scheduler.h"
#include "tests/engine/fake_executor.h"

namespace weft::engine::testing {

// A KV config of `blocks` blocks of `bs` tokens (window > 0: every layer
// windowed).
inline kv::KvCacheConfig Kv(int blocks, int bs = 16, int window = 0) {
  kv::KvCacheConfig c;
  c.num_blocks = blocks;
  c.block_size = bs;
  c.sliding_window = window;
  return c;
}

inline StopConditions MaxTokens(int n, std::vector<TokenId> stops = {}) {
  StopConditions s;
  s.max_tokens = n;
  s.stop_token_ids = std::move(stops);
  return s;
}

class Sim {
 public:
  // `proposer`: SpecMethod::kDraft's (Scheduler::Create).
  Sim(const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
      std::shared_ptr<Proposer> proposer = nullptr)
      : config_(config),
        kv_config_(kv_config),
        sched_(Scheduler::Create(config, kv_config, std::move(proposer))
                   .value()),
        exec_(kv_config.num_blocks, kv_config.block_size,
              kv_config.sliding_window,
              [this](RequestId id, int pos) { return TokenAt(id, pos); }) {
    if (kv_config.local_num_blocks > 0) {
      exec_.EnableLocalGroup(kv_config.local_num_blocks,
                             kv_config.local_window);
    }
  }

  Scheduler& sched() { return *sched_; }
  FakeExecutor& exec() { return exec_; }

  Status Submit(RequestId id, std::vector<TokenId> prompt,
                StopConditions stop = {}, int priority = 0,
                std::optional<RequestId> sibling_of = {}) {
    RequestSpec spec;
    spec.id = id;
    spec.prompt = std::move(prompt);
    spec.priority = priority;
    spec.sibling_of = sibling_of;
    spec.stop = std::move(stop);
    return SubmitSpec(std::move(spec));
  }
  Status SubmitSpec(RequestSpec spec) {
    const RequestId id = spec.id;
    std::vector<TokenId> prompt = spec.prompt;
    StopConditions stop = spec.stop;
    Status s = sched_->Submit(std::move(spec));
    if (s.ok()) {
      prompts_[id] = std::move(prompt);
      stops_[id] = std::move(stop);
      live_.insert(id);
      submit_step_[id] = steps_;
    }
    return s;
  }
  // The prompt tokens whose logprobs request `id` reported, in order.
  const std::vector<TokenId>& prompt_logprob_tokens(RequestId id) {
    return prompt_lp_tokens_[id];
  }

  // One Schedule / Execute / Update round with every per-pass check.
  StepPlan Step() {
    StepPlan plan = sched_->Schedule();
    CheckPlan(plan);
    Collect();  // errors raised while scheduling
    if (!plan.empty()) {
      ++steps_;
      auto sampled = exec_.Execute(plan);
      EXPECT_TRUE(exec_.error.empty()) << exec_.error;
      const std::vector<PromptLogprobs> prompt_lps = exec_.TakePromptLogprobs();
      sched_->Update(plan, *sampled, prompt_lps);
      sched_->ObservePass(plan, exec_.last_ms);
      for (const ScheduledSeq& s : plan.seqs) {
        if (!first_step_.count(s.id)) first_step_[s.id] = steps_;
      }
    }
    Collect();
    return plan;
  }

  // Steps until the scheduler is idle (or max_steps passes).
  int RunUntilIdle(int max_steps = 100000) {
    int n = 0;
    while (sched_->HasWork() && n < max_steps) {
      Step();
      ++n;
    }
    EXPECT_FALSE(sched_->HasWork()) << "did not drain in " << max_steps;
    return n;
  }

  void Abort(RequestId id) {
    EXPECT_TRUE(sched_->Abort(id).ok());
    Collect();
  }

  // After draining: every block free or idle-cached, every request finished
  // exactly once, outputs exactly as the fake model dictates.
  void CheckAllDone() {
    EXPECT_TRUE(live_.empty());
    for (int g = 0; g < sched_->kv().num_groups(); ++g) {
      const kv::BlockPoolStats st = sched_->kv().pool(g).stats();
      EXPECT_EQ(st.num_used, 0) << "group " << g;
      EXPECT_EQ(st.num_free + st.num_idle_cached, st.num_blocks);
    }
    EXPECT_EQ(sched_->kv().stats().num_used, 0);
    EXPECT_TRUE(sched_->kv().CheckInvariants().ok());
    EXPECT_EQ(sched_->kv().num_sequences(), 0);
    for (auto& [id, prompt] : prompts_) {
      EXPECT_EQ(finishes_[id], 1) << "request " << id;
      const FinishReason why = reasons_[id];
      std::vector<TokenId> want = ExpectedOutput(
          id, static_cast<int>(prompt.size()), stops_[id],
          config_.max_model_len, exec_.period);
      const std::vector<TokenId>& got = outputs_[id];
      if (why == FinishReason::kStop || why == FinishReason::kLength) {
        EXPECT_EQ(got, want) << "request " << id;
      } else {  // aborted or failed: a prefix of what it would have said
        ASSERT_LE(got.size(), want.size()) << "request " << id;
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin()))
            << "request " << id;
      }
    }
  }

  const std::vector<TokenId>& output(RequestId id) { return outputs_[id]; }
  FinishReason reason(RequestId id) { return reasons_[id]; }
  const std::string& error(RequestId id) { return errors_[id]; }
  int finishes(RequestId id) { return finishes_[id]; }
  int cached_tokens(RequestId id) { return cached_[id]; }
  int first_step(RequestId id) { return first_step_.count(id) ? first_step_[id] : -1; }
  int steps() const { return steps_; }
  const std::set<RequestId>& live() const { return live_; }

 private:
  TokenId TokenAt(RequestId id, int pos) {
    const std::vector<TokenId>& p = prompts_[id];
    if (pos < static_cast<int>(p.size())) return p[static_cast<size_t>(pos)];
    const std::vector<TokenId>& o = outputs_[id];
    const size_t i = static_cast<size_t>(pos) - p.size();
    return i < o.size() ? o[i] : -1;
  }

  void CheckPlan(const StepPlan& plan) {
    // A pass with a decode keeps to the configured budget and chunk; one
    // without may use the idle prefill budget.
    bool has_decode = false;
    std::set<RequestId> admitted;
    for (const ScheduledSeq& s : plan.seqs) {
      if (s.admitted) admitted.insert(s.id);
    }
    for (RequestId id : live_) {
      const Request* r = sched_->Find(id);
      has_decode |= r != nullptr && !admitted.count(id) &&
                    r->status == RequestStatus::kRunning &&
                    r->num_tokens() - r->num_computed_tokens == 1;
    }
    // (A decode preempted by this very pass no longer shows here, so only
    // a pass that still has one is held to the tight budget.)
    const bool idle = !has_decode && config_.idle_prefill_tokens > 0;
    // Sized by time (target_itl_ms): up to the larger budget and chunk.
    const bool timed = plan.target_ms >= 0;
    if (timed) {
      EXPECT_TRUE(has_decode);
      if (config_.target_itl_ms > 0) {
        EXPECT_EQ(plan.target_ms, config_.target_itl_ms);
      } else {
        EXPECT_GT(plan.target_ms, 0);
      }
    }
    if (!idle && !timed) {
      EXPECT_EQ(plan.budget, config_.max_batched_tokens);
    }
    EXPECT_LE(plan.num_batched_tokens, plan.budget);
    EXPECT_LE(plan.budget, config_.MaxPassTokens());
    EXPECT_LE(static_cast<int>(plan.seqs.size()), config_.max_seqs);
    int sum = 0;
    std::set<RequestId> ids;
    const int cap = idle || timed ? config_.MaxChunk() : config_.ChunkCap();
    for (const ScheduledSeq& s : plan.seqs) {
      EXPECT_TRUE(ids.insert(s.id).second) << "twice in a plan: " << s.id;
      EXPECT_GE(s.num_new_tokens, 1);
      EXPECT_LE(s.num_new_tokens - s.num_draft_tokens, std::max(cap, 1));
      EXPECT_LE(s.num_draft_tokens, config_.spec_k_max);
      if (s.num_draft_tokens > 0) {
        EXPECT_TRUE(s.needs_logits);
        EXPECT_EQ(s.num_new_tokens, 1 + s.num_draft_tokens);
      }
      EXPECT_EQ(static_cast<int>(s.tokens.size()), s.num_new_tokens);
      EXPECT_EQ(static_cast<int>(s.slots.size()), s.num_new_tokens);
      sum += s.num_new_tokens;
    }
    EXPECT_EQ(sum, plan.num_batched_tokens);
    // Decode-maximal: every running request waiting only for its decode
    // token is in the plan (unless preempted by this very pass).
    for (RequestId id : live_) {
      const Request* r = sched_->Find(id);
      if (r != nullptr && r->status == RequestStatus::kRunning &&
          r->num_tokens() - r->num_computed_tokens == 1) {
        EXPECT_TRUE(ids.count(id)) << "decode of " << id << " skipped";
      }
    }
    for (RequestId id : plan.preempted) EXPECT_FALSE(ids.count(id));
  }

  void Collect() {
    for (RequestEvent& ev : sched_->TakeEvents()) {
      EXPECT_TRUE(live_.count(ev.id)) << "event after finish: " << ev.id;
      auto& out = outputs_[ev.id];
      out.insert(out.end(), ev.new_tokens.begin(), ev.new_tokens.end());
      std::vector<TokenId>& lp = prompt_lp_tokens_[ev.id];
      if (!ev.prompt_logprobs.empty()) {
        EXPECT_EQ(ev.prompt_logprobs_first, static_cast<int>(lp.size()) + 1);
        EXPECT_TRUE(out.empty()) << "prompt logprobs after output tokens";
      }
      for (const PromptTokenLogprob& e : ev.prompt_logprobs) {
        lp.push_back(e.token);
      }
      EXPECT_EQ(static_cast<int>(out.size()), ev.num_output_tokens);
      if (ev.finished) {
        if (ev.reason == FinishReason::kError &&
            kv_config_.sliding_window == 0 &&
            kv_config_.local_num_blocks == 0) {
          // Only a request that alone outgrows the cache may fail.
          EXPECT_GT(ev.num_prompt_tokens + ev.num_output_tokens,
                    kv_config_.num_blocks * kv_config_.block_size)
              << ev.error;
        }
        ++finishes_[ev.id];
        reasons_[ev.id] = ev.reason;
        errors_[ev.id] = ev.error;
        cached_[ev.id] = ev.num_cached_tokens;
        live_.erase(ev.id);
      }
    }
  }

  SchedulerConfig config_;
  kv::KvCacheConfig kv_config_;
  std::unique_ptr<Scheduler> sched_;
  FakeExecutor exec_;
  std::map<RequestId, std::vector<TokenId>> prompts_, outputs_;
  std::map<RequestId, std::vector<TokenId>> prompt_lp_tokens_;
  std::map<RequestId, StopConditions> stops_;
  std::map<RequestId, int> finishes_, cached_, first_step_, submit_step_;
  std::map<RequestId, FinishReason> reasons_;
  std::map<RequestId, std::string> errors_;
  std::set<RequestId> live_;
  int steps_ = 0;
};

inline std::vector<TokenId> Prompt(int first, int n) {
  std::vector<TokenId> p;
  for (int i = 0; i < n; ++i) p.push_back(100 + (first + i) % 5000);
  return p;
}

}  // namespace weft::engine::testing
