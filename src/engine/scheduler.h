// Scheduler: the iteration-level policy (vLLM v1 style). Each Schedule()
// decides which requests run in the next forward pass and how many tokens
// each feeds, within the token budget, the running limit and the free KV
// blocks; Update() applies the sampled tokens, checks stop conditions and
// frees finished requests at once so their blocks serve the next pass.
//
// Order within a pass: (1) one decode token for every running request whose
// only uncomputed token is its last (decode-maximal: generation never waits
// for a prompt), (2) the next chunk of prompts already being prefilled,
// (3) waiting requests by arrival (SchedulingPolicy::kPriority: by
// (priority, arrival)), while budget, max_seqs and KV allow (head-of-line:
// the first that does not fit stops admission). When a running request
// cannot get a KV slot, the most recently admitted running request (with
// kPriority: of the lowest priority class) is preempted (blocks freed,
// requeued, later recomputed from prompt + output).
//
// (4) Speculative decoding (SchedulerConfig::spec_method): after all of
// that, each decoding sequence may get draft tokens from the proposer,
// appended to its decode token, from what the budget (and time) leaves;
// with spec_adaptive the count maximizes the pass's expected tokens per
// predicted ms (ChooseK), so a compute-bound batch drafts nothing; a
// request's acceptance record ages in passes that turn its proposal down,
// so early misses do not stop its speculation for good. The
// proposer is asked once per pass for all speculating sequences
// (Proposer::ProposeBatch), synchronously inside Schedule; a costly one
// (a draft model) is asked for exactly the guesses the pass would take,
// each guess position priced at the measured ms of one of its guess
// forwards (its catch-up over unseen tokens left out:
// Proposer::last_timing), shared by the sequences drafting that far; the
// price ages while no guess is made, so it is measured again. Drafts never
// preempt: a draft that gets no KV slot is dropped. Update keeps the
// confirmed guesses' KV and truncates the rest (kv::KvCacheManager::
// Truncate); only verified tokens are ever committed to the prefix cache.
//
// Pass size: a fixed token budget and chunk cap, or with
// SchedulerConfig::target_itl_ms a time budget: the pass cost model
// (fit from ObservePass) predicts each chunk's time, and prompt chunks take
// what the decodes leave of the target. A request that alone exceeds the cache
// finishes with an error instead of deadlocking.
//
// KV groups: with a local group (kv::KvCacheConfig::local_num_blocks, a
// hybrid model's sliding-window layers) every allocation takes blocks from
// both pools or from none, each ScheduledSeq carries both tables, and after
// each Update the blocks that left the window are released. Submit refuses
// a prompt that alone cannot fit either group (kv::KvCacheManager::
// MaxBlocksHeld with this config's chunk cap).
//
// Thread safety: none. One thread (the engine's step loop) calls everything.
// Invariant: every live request is in exactly one of waiting_ / running_;
// a request holds KV blocks iff it is running.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "engine/pass_cost_model.h"
#include "engine/proposer.h"
#include "engine/request.h"
#include "engine/scheduler_config.h"
#include "engine/step_plan.h"
#include "kv/kv_cache_manager.h"
#include "util/status.h"

namespace weft::engine {

struct SchedulerStats {
  int64_t num_steps = 0;           // non-empty plans
  int64_t num_preemptions = 0;     // requests preempted (recompute)
  int64_t num_finished = 0;        // requests finished, any reason
  int64_t num_scheduled_tokens = 0;  // tokens fed to the executor
  int64_t num_budget_tokens = 0;   // sum of those plans' budgets (each
                                   // pass's own: idle-prefill passes get
                                   // the larger one)
  int num_waiting = 0;             // now
  int num_running = 0;             // now
  // Speculative decoding (vLLM's spec_decode counters):
  int64_t spec_num_drafts = 0;          // sequence-passes that verified
  int64_t spec_num_draft_tokens = 0;    // guesses verified
  int64_t spec_num_accepted_tokens = 0; // guesses confirmed
  // [spec_k_max]: guesses confirmed at draft position i (0-based).
  std::vector<int64_t> spec_accepted_per_pos;
};

class Scheduler {
 public:
  // Fails on an invalid config. `proposer`: the guesses of
  // SpecMethod::kDraft (required then, refused otherwise; kNgram builds its
  // own NgramProposer). Shared so that its owner may read its state when
  // the engine is idle; the scheduler is its only caller.
  static StatusOr<std::unique_ptr<Scheduler>> Create(
      const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
      std::shared_ptr<Proposer> proposer = nullptr);

  // Queues a request. INVALID_ARGUMENT (empty prompt, duplicate id, prompt
  // not shorter than max_model_len, max_tokens < 1), RESOURCE_EXHAUSTED
  // (queue full, prompt larger than the whole KV cache).
  Status Submit(RequestSpec spec);

  // Finishes a request in any state (waiting, running, preempted) with
  // reason kAborted; NOT_FOUND if it is not live.
  Status Abort(RequestId id);
  // Finishes a live request with `reason`: the engine's hook for stop
  // strings (kStop), which need detokenized text the scheduler lacks.
  Status Finish(RequestId id, FinishReason reason, std::string error = "");

  // Plans the next pass. An empty plan means there is nothing to run.
  StepPlan Schedule();
  // Feeds the pass cost model: `plan` (as Schedule returned it) took `ms`
  // from Schedule to the delivery of its events.
  void ObservePass(const StepPlan& plan, double ms);
  const PassCostModel& cost_model() const { return cost_; }

  // Applies a pass's results: `sampled` holds one token for every scheduled
  // sequence with needs_logits (sequences aborted meanwhile are skipped);
  // `prompt_logprobs` what the executor computed for prompt_targets.
  void Update(const StepPlan& plan, std::span<const SampledToken> sampled,
              std::span<const PromptLogprobs> prompt_logprobs = {});

  // Events since the last call (new tokens, finishes), in order.
  std::vector<RequestEvent> TakeEvents();

  bool HasWork() const { return !waiting_.empty() || !running_.empty(); }
  int num_waiting() const { return static_cast<int>(waiting_.size()); }
  int num_running() const { return static_cast<int>(running_.size()); }
  const Request* Find(RequestId id) const;
  const SchedulerConfig& config() const { return config_; }
  const kv::KvCacheManager& kv() const { return kv_; }
  SchedulerStats stats() const;

 private:
  struct Pass;
  Scheduler(const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
            std::shared_ptr<Proposer> proposer);

  void ScheduleRunning(Request* req, Pass* pass);
  bool TryAdmit(Request* req, Pass* pass);
  // `admitted`: the request joined running in this pass (ScheduledSeq::
  // admitted, with all its tokens).
  void AddToPlan(Request* req, int n, const kv::SlotAllocation& alloc,
                 bool admitted, Pass* pass);
  void Preempt(Request* victim, Pass* pass);
  void Unschedule(RequestId id, Pass* pass);
  void Enqueue(Request* req);
  // Frees blocks, leaves the queues, emits the final event (with `tok` if
  // given), forgets the request.
  // `ev` may carry the last tokens (new_tokens etc.).
  void FinishRequest(Request* req, FinishReason reason, std::string error,
                     RequestEvent ev = RequestEvent());
  // Appends a pass's tokens for `req` (one, or a verified speculative run),
  // checking the stop conditions after each: a stop ends the request with
  // the tokens up to it and drops the rest. Commits the computed blocks
  // (CommitKv) and emits the event.
  void AppendTokens(Request* req,
                    std::span<const SampledToken* const> emitted);
  // Offers `req`'s newly computed full blocks to the prefix cache (its
  // tokens must cover num_computed_tokens).
  void CommitKv(Request* req);
  // (4) of Schedule: draft tokens for the pass's decodes (scheduler_spec.cc).
  void PlanDrafts(Pass* pass);
  struct SpecLeft;  // what a pass has left for guesses (scheduler_spec.cc)
  // PlanDrafts' parts: (a) fills asks_ from the pass's decodes, true when
  // some of them may speculate (asked or not); (c) adds proposal `ask`'s
  // guesses to the plan, trimmed to what is `left`.
  bool PlanAsks(SpecLeft left, const Pass& pass);
  void AddDrafts(size_t ask, SpecLeft* left, Pass* pass);
  // The guesses `s` may take given a proposal of `proposed` tokens and
  // what is `left` (budget, time, the adaptive choice), and what taking k
  // of them charges to `left`.
  int ChooseDrafts(const ScheduledSeq& s, const Request& req, int proposed,
                   const SpecLeft& left) const;
  void ChargeDrafts(const ScheduledSeq& s, const Request& req, int k,
                    SpecLeft* left) const;
  // Updates a costly proposer's price of a guess (draft_step_ms_) after a
  // pass that asked it (`t`: the call's timing) or could have but did not.
  void PriceGuesses(bool asked, const ProposeTiming& t);
  // The predicted ms that verifying k guesses of `s` adds to a pass.
  double VerifyMs(const ScheduledSeq& s, int k) const;
  // The number of drafts of a sequence's guess worth verifying this pass.
  // A costly proposer's guesses cost draft_step_ms each beyond the
  // draft_steps the pass already makes (one draft forward per guess
  // position, shared by every sequence).
  int ChooseK(const Request& req, int start_pos, int max_k, double pass_ms,
              double pass_tokens, int draft_steps = 0,
              double draft_step_ms = 0) const;
  // Records a verification's result in the request and the stats.
  void NoteSpecResult(Request* req, int drafted, int accepted);
  std::optional<FinishReason> CheckStop(const Request& req) const;
  // The pass's per-sequence chunk cap as it applies to `req`: smaller
  // while a request that reports prompt logprobs computes its prompt.
  int ChunkCapFor(const Request& req, const Pass& pass) const;
  // Under target_itl_ms: the most prompt tokens a chunk from `start_pos`
  // with `remaining` tokens to go may take in the time the pass has left
  // (at least min_prefill_tokens for the pass's first prompt chunk).
  int TimedCap(int start_pos, int remaining, int cap, const Pass& pass) const;
  // Sizes `pass` (budget, chunk cap, time) once its decodes are known.
  void SizePass(const std::vector<RequestId>& decodes, Pass* pass) const;
  static PassFeatures FeaturesOf(const StepPlan& plan);
  // Emits the prompt logprobs of `p` that come next for `req`, in order.
  void EmitPromptLogprobs(Request* req, const PromptLogprobs& p);

  SchedulerConfig config_;
  kv::KvCacheManager kv_;
  PassCostModel cost_;
  std::unordered_map<RequestId, std::unique_ptr<Request>> requests_;
  std::deque<Request*> waiting_;  // sorted by (priority, arrival)
  std::vector<Request*> running_; // by admission, oldest first
  std::vector<RequestEvent> events_;
  std::vector<RequestId> freed_;  // finished since the last plan
  uint64_t next_arrival_ = 0;
  uint64_t next_admission_ = 0;
  uint64_t step_ = 0;
  SchedulerStats stats_;
  std::shared_ptr<Proposer> proposer_;  // null: no speculation
  // PlanDrafts' scratch: the pass's asks, the plan index of each, and the
  // proposer's answers.
  std::vector<ProposeRequest> asks_;
  std::vector<size_t> ask_seqs_;
  std::vector<std::vector<TokenId>> drafts_;
  // A costly proposer's ms per guess position (one draft forward over the
  // pass's sequences): a decaying mean of its guess forwards
  // (ProposeTiming, catch-up excluded), aged while no guess is made
  // (PriceGuesses); < 0 before the first measurement.
  double draft_step_ms_ = -1;
};

}  // namespace weft::engine
