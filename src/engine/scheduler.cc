#include "engine/scheduler.h"

#include <algorithm>
#include <utility>

#include "engine/scheduler_pass.h"
#include "util/strings.h"

namespace weft::engine {


StatusOr<std::unique_ptr<Scheduler>> Scheduler::Create(
    const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
    std::shared_ptr<Proposer> proposer) {
  RETURN_IF_ERROR(config.Validate());
  RETURN_IF_ERROR(kv_config.Validate());
  if (config.spec_method == SpecMethod::kDraft && proposer == nullptr) {
    return InvalidArgumentError(
        "speculation with a draft model needs its proposer");
  }
  if (config.spec_method != SpecMethod::kDraft && proposer != nullptr) {
    return InvalidArgumentError(
        "a proposer was given, but spec_method is not draft");
  }
  return std::unique_ptr<Scheduler>(
      new Scheduler(config, kv_config, std::move(proposer)));
}

Scheduler::Scheduler(const SchedulerConfig& config,
                     const kv::KvCacheConfig& kv_config,
                     std::shared_ptr<Proposer> proposer)
    : config_(config),
      kv_(kv_config),
      cost_(config.cost_model_window, config.cost_model_min_samples),
      proposer_(std::move(proposer)) {
  if (config.spec_method == SpecMethod::kNgram) {
    proposer_ = std::make_shared<NgramProposer>(config.spec_ngram_min,
                                                config.spec_ngram_max);
  }
  if (proposer_ != nullptr) {
    stats_.spec_accepted_per_pos.assign(size_t(config.spec_k_max), 0);
  }
}

Status Scheduler::Submit(RequestSpec spec) {
  if (spec.prompt.empty()) return InvalidArgumentError("empty prompt");
  if (requests_.count(spec.id)) {
    return InvalidArgumentError(
        StrFormat("request %lld already exists", (long long)spec.id));
  }
  const int n = static_cast<int>(spec.prompt.size());
  if (n >= config_.max_model_len) {
    return InvalidArgumentError(
        StrFormat("prompt of %d tokens does not fit the context of %d", n,
                  config_.max_model_len));
  }
  if (spec.stop.max_tokens < 1) {
    return InvalidArgumentError("max_tokens must be >= 1");
  }
  if (spec.priority != 0 && config_.policy != SchedulingPolicy::kPriority) {
    return InvalidArgumentError(StrFormat(
        "priority %d given, but priority scheduling is off (the server's "
        "--scheduling-policy is fcfs)", spec.priority));
  }
  if (spec.prompt_logprobs > sampling::kMaxLogprobs) {
    return InvalidArgumentError(StrFormat(
        "prompt_logprobs must be at most %d", sampling::kMaxLogprobs));
  }
  for (int g = 0; g < kv_.num_groups(); ++g) {
    const int need = kv_.MaxBlocksHeld(g, n + 1, config_.ChunkCap());
    if (need > kv_.pool(g).num_blocks()) {
      return ResourceExhaustedError(StrFormat(
          "prompt of %d tokens needs %d KV blocks%s; the cache has %d", n,
          need, g == kv::kLocalGroup ? " for sliding-window layers" : "",
          kv_.pool(g).num_blocks()));
    }
  }
  if (!spec.sibling_of && num_waiting() >= config_.max_queue) {
    return ResourceExhaustedError(
        StrFormat("queue full (%d waiting)", num_waiting()));
  }
  auto req = std::make_unique<Request>();
  req->id = spec.id;
  req->tokens = std::move(spec.prompt);
  req->num_prompt_tokens = n;
  req->priority = spec.priority;
  req->prompt_logprobs = spec.prompt_logprobs;
  req->stop = std::move(spec.stop);
  req->speculative = proposer_ != nullptr && spec.speculative.value_or(true);
  req->sampling = std::make_shared<const sampling::SamplingParams>(
      std::move(spec.sampling));
  req->arrival = next_arrival_++;
  if (spec.sibling_of) {
    if (const Request* first = Find(*spec.sibling_of)) {
      req->arrival = first->arrival;
    }
  }
  Request* r = req.get();
  requests_.emplace(r->id, std::move(req));
  Enqueue(r);
  return OkStatus();
}

void Scheduler::Enqueue(Request* req) {
  auto before = [](const Request* a, const Request* b) {
    return a->priority != b->priority ? a->priority < b->priority
                                      : a->arrival < b->arrival;
  };
  waiting_.insert(std::upper_bound(waiting_.begin(), waiting_.end(), req,
                                   before),
                  req);
}

Status Scheduler::Abort(RequestId id) {
  return Finish(id, FinishReason::kAborted);
}

Status Scheduler::Finish(RequestId id, FinishReason reason,
                         std::string error) {
  auto it = requests_.find(id);
  if (it == requests_.end()) {
    return NotFoundError(StrFormat("no live request %lld", (long long)id));
  }
  FinishRequest(it->second.get(), reason, std::move(error));
  return OkStatus();
}

const Request* Scheduler::Find(RequestId id) const {
  auto it = requests_.find(id);
  return it == requests_.end() ? nullptr : it->second.get();
}

SchedulerStats Scheduler::stats() const {
  SchedulerStats s = stats_;
  s.num_waiting = num_waiting();
  s.num_running = num_running();
  return s;
}

std::vector<RequestEvent> Scheduler::TakeEvents() {
  return std::exchange(events_, {});
}

void Scheduler::FinishRequest(Request* req, FinishReason reason,
                              std::string error, RequestEvent ev) {
  kv_.Free(req->id);
  if (proposer_ != nullptr) proposer_->Release(req->id);
  if (req->status == RequestStatus::kRunning) {
    running_.erase(std::find(running_.begin(), running_.end(), req));
  } else {
    auto it = std::find(waiting_.begin(), waiting_.end(), req);
    CHECK(it != waiting_.end());
    waiting_.erase(it);
  }
  req->status = RequestStatus::kFinished;
  req->finish_reason = reason;
  ev.id = req->id;
  ev.finished = true;
  ev.reason = reason;
  ev.error = std::move(error);
  ev.num_prompt_tokens = req->num_prompt_tokens;
  ev.num_output_tokens = req->num_output_tokens();
  ev.num_cached_tokens = req->num_cached_tokens;
  events_.push_back(std::move(ev));
  freed_.push_back(req->id);
  ++stats_.num_finished;
  requests_.erase(req->id);  // `req` dangles from here
}

StepPlan Scheduler::Schedule() {
  Pass pass;
  pass.plan.freed = std::exchange(freed_, {});

  // (1) decodes, then (2) continuing prefills, each by admission order.
  std::vector<RequestId> order;
  order.reserve(running_.size());
  for (const Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens == 1) order.push_back(r->id);
  }
  SizePass(order, &pass);
  pass.prompt_logprob_rows = config_.prompt_logprobs_chunk;
  for (const Request* r : running_) {
    if (r->num_tokens() - r->num_computed_tokens > 1) order.push_back(r->id);
  }
  for (RequestId id : order) {
    // Requests preempted or failed earlier in this pass are skipped.
    auto it = requests_.find(id);
    if (it == requests_.end() ||
        it->second->status != RequestStatus::kRunning) {
      continue;
    }
    ScheduleRunning(it->second.get(), &pass);
  }

  // (3) new and preempted requests, unless this pass had to preempt.
  if (pass.plan.preempted.empty()) {
    while (!waiting_.empty() && pass.budget > 0 &&
           num_running() < config_.max_seqs) {
      if (!TryAdmit(waiting_.front(), &pass)) break;
    }
  }

  // (4) draft tokens from what is left.
  if (proposer_ != nullptr) PlanDrafts(&pass);

  for (auto& [id, copy] : pass.copies) pass.plan.copies.push_back(copy);
  pass.plan.budget = std::max(pass.plan.budget, pass.plan.num_batched_tokens);
  if (cost_.ready()) pass.plan.predicted_ms = cost_.Predict(FeaturesOf(pass.plan));
  if (!pass.plan.seqs.empty()) {
    pass.plan.step = ++step_;
    ++stats_.num_steps;
    stats_.num_scheduled_tokens += pass.plan.num_batched_tokens;
    stats_.num_budget_tokens += pass.plan.budget;
  } else {
    // An empty plan is not executed: the executor hears of these with the
    // next plan that is (else their per-request state would never go).
    freed_.insert(freed_.begin(), pass.plan.freed.begin(),
                  pass.plan.freed.end());
    pass.plan.freed.clear();
  }
  return std::move(pass.plan);
}

void Scheduler::ScheduleRunning(Request* req, Pass* pass) {
  const int remaining = req->num_tokens() - req->num_computed_tokens;
  CHECK_GE(remaining, 1);
  int n = std::min(remaining, pass->budget);
  if (remaining > 1) {
    n = std::min(n, ChunkCapFor(*req, *pass));
    n = TimedCap(req->num_computed_tokens, remaining, n, *pass);
  }
  if (n <= 0) return;  // budget spent (only prefills get here: see Validate)
  for (;;) {
    std::optional<kv::SlotAllocation> alloc = kv_.AllocateSlots(req->id, n);
    if (alloc) {
      AddToPlan(req, n, *alloc, /*admitted=*/false, pass);
      return;
    }
    if (n > config_.ChunkCap() && remaining > 1) {
      // An idle pass's large chunk does not fit: take a normal one before
      // preempting anyone for it.
      n = config_.ChunkCap();
      continue;
    }
    // The lowest priority class goes first, within it the most recently
    // admitted (vLLM's priority policy; plain LIFO when all are equal).
    Request* victim = *std::max_element(
        running_.begin(), running_.end(),
        [](const Request* a, const Request* b) {
          return a->priority != b->priority ? a->priority < b->priority
                                            : a->admission < b->admission;
        });
    if (victim == req && running_.size() == 1) {
      // Nothing else holds blocks: this request alone exceeds the cache
      // (a server caps its context so that this cannot happen).
      FinishRequest(req, FinishReason::kError,
                    StrFormat("request of %d tokens does not fit the KV "
                              "cache alone (%d blocks of %d tokens)",
                              req->num_tokens(), kv_.pool().num_blocks(),
                              kv_.block_size()));
      return;
    }
    Preempt(victim, pass);
    if (victim == req) return;
  }
}

int Scheduler::ChunkCapFor(const Request& req, const Pass& pass) const {
  if (req.prompt_logprobs >= 0 &&
      req.num_computed_tokens < req.num_prompt_tokens) {
    return std::min(pass.chunk_cap, pass.prompt_logprob_rows);
  }
  return pass.chunk_cap;
}

bool Scheduler::TryAdmit(Request* req, Pass* pass) {
  kv::PrefixHit hit;
  // A request that wants its prompt's logprobs computes every position.
  if (config_.enable_prefix_caching && req->prompt_logprobs < 0) {
    hit = kv_.FindCachedPrefix(req->tokens);
  }
  const int remaining = req->num_tokens() - hit.num_tokens;
  int n = std::min({remaining, pass->budget,
                    remaining > 1 ? ChunkCapFor(*req, *pass) : remaining});
  n = TimedCap(hit.num_tokens, remaining, n, *pass);
  if (n <= 0) return false;  // this pass's prompt-logprob rows are spent
  std::optional<kv::SlotAllocation> alloc =
      kv_.AllocateSlots(req->id, n, &hit, req->num_tokens());
  if (!alloc && n > config_.ChunkCap()) {
    // An idle pass's large chunk does not fit: try a normal one.
    n = config_.ChunkCap();
    alloc = kv_.AllocateSlots(req->id, n, &hit, req->num_tokens());
  }
  if (!alloc) return false;
  waiting_.pop_front();
  if (req->num_preemptions == 0) req->num_cached_tokens = hit.num_tokens;
  req->num_computed_tokens = hit.num_tokens;
  req->status = RequestStatus::kRunning;
  req->admission = next_admission_++;
  running_.push_back(req);
  AddToPlan(req, n, *alloc, /*admitted=*/true, pass);
  return true;
}

void Scheduler::AddToPlan(Request* req, int n, const kv::SlotAllocation& alloc,
                          bool admitted, Pass* pass) {
  CHECK_EQ(alloc.start_pos, req->num_computed_tokens);
  ScheduledSeq s;
  s.id = req->id;
  s.start_pos = alloc.start_pos;
  s.num_new_tokens = n;
  s.needs_logits = alloc.start_pos + n == req->num_tokens();
  s.tokens.assign(req->tokens.begin() + alloc.start_pos,
                  req->tokens.begin() + alloc.start_pos + n);
  s.slots = alloc.slots;
  s.block_table = kv_.Table(req->id)->blocks;
  if (kv_.num_groups() > 1) {
    s.local_block_table = kv_.Table(req->id, kv::kLocalGroup)->blocks;
  }
  s.sampling = req->sampling;
  s.num_prompt_tokens = req->num_prompt_tokens;
  s.admitted = admitted;
  if (admitted) s.all_tokens = req->tokens;
  if (req->prompt_logprobs >= 0) {
    // Position p reports prompt token p + 1; tokens [1, sent] are done.
    const int from = std::max(alloc.start_pos, req->prompt_logprobs_sent);
    const int end = std::min(alloc.start_pos + n, req->num_prompt_tokens - 1);
    if (from < end) {
      s.prompt_logprobs_from = from;
      s.prompt_targets.assign(req->tokens.begin() + from + 1,
                              req->tokens.begin() + end + 1);
      s.prompt_logprobs_top = req->prompt_logprobs;
      pass->prompt_logprob_rows -= end - from;
    }
  }
  for (const kv::BlockCopy& c : alloc.copies) {
    pass->copies.emplace_back(req->id, c);
  }
  if (pass->timed) {
    pass->time_left_ms -= cost_.ChunkMs(alloc.start_pos, n, s.needs_logits);
  }
  if (req->num_tokens() - alloc.start_pos > 1) pass->took_prefill = true;
  pass->budget -= n;
  pass->plan.num_batched_tokens += n;
  pass->plan.seqs.push_back(std::move(s));
}

void Scheduler::Unschedule(RequestId id, Pass* pass) {
  auto& seqs = pass->plan.seqs;
  auto it = std::find_if(seqs.begin(), seqs.end(),
                         [id](const ScheduledSeq& s) { return s.id == id; });
  if (it == seqs.end()) return;
  pass->budget += it->num_new_tokens;
  pass->plan.num_batched_tokens -= it->num_new_tokens;
  seqs.erase(it);
  std::erase_if(pass->copies, [id](const auto& c) { return c.first == id; });
}

void Scheduler::Preempt(Request* victim, Pass* pass) {
  Unschedule(victim->id, pass);
  kv_.Free(victim->id);
  // A proposer's state for it (a draft model's KV) goes too: the KV a
  // preempted request no longer holds is not kept for it elsewhere.
  if (proposer_ != nullptr) proposer_->Release(victim->id);
  running_.erase(std::find(running_.begin(), running_.end(), victim));
  victim->num_computed_tokens = 0;
  victim->status = RequestStatus::kPreempted;
  ++victim->num_preemptions;
  ++stats_.num_preemptions;
  Enqueue(victim);
  pass->plan.preempted.push_back(victim->id);
}

std::optional<FinishReason> Scheduler::CheckStop(const Request& req) const {
  const TokenId last = req.tokens.back();
  // Stop ids count once more than min_tokens tokens exist.
  if (req.num_output_tokens() > req.stop.min_tokens) {
    for (TokenId s : req.stop.stop_token_ids) {
      if (s == last) return FinishReason::kStop;
    }
  }
  if (req.num_output_tokens() >= req.stop.max_tokens) {
    return FinishReason::kLength;
  }
  if (req.num_tokens() >= config_.max_model_len) return FinishReason::kLength;
  return std::nullopt;
}

void Scheduler::EmitPromptLogprobs(Request* req, const PromptLogprobs& p) {
  RequestEvent ev;
  ev.id = req->id;
  ev.prompt_logprobs_first = req->prompt_logprobs_sent + 1;
  for (size_t i = 0; i < p.entries.size(); ++i) {
    // Only the next tokens in order (a recomputed chunk repeats some).
    if (p.first_token + static_cast<int>(i) != req->prompt_logprobs_sent + 1) {
      continue;
    }
    ev.prompt_logprobs.push_back(p.entries[i]);
    ++req->prompt_logprobs_sent;
  }
  if (ev.prompt_logprobs.empty()) return;
  ev.num_prompt_tokens = req->num_prompt_tokens;
  ev.num_output_tokens = req->num_output_tokens();
  ev.num_cached_tokens = req->num_cached_tokens;
  events_.push_back(std::move(ev));
}

void Scheduler::Update(const StepPlan& plan,
                       std::span<const SampledToken> sampled,
                       std::span<const PromptLogprobs> prompt_logprobs) {
  for (const ScheduledSeq& s : plan.seqs) {
    auto it = requests_.find(s.id);
    if (it == requests_.end()) continue;  // finished (aborted) meanwhile
    Request* req = it->second.get();
    if (req->status != RequestStatus::kRunning ||
        req->num_computed_tokens != s.start_pos) {
      continue;  // stale: preempted or re-planned since
    }
    std::vector<const SampledToken*> emitted;
    if (s.needs_logits) {
      for (const SampledToken& t : sampled) {
        if (t.id == s.id) emitted.push_back(&t);
      }
    }
    int computed = s.num_new_tokens;
    if (s.num_draft_tokens > 0) {
      // Rejected guesses leave the table (their KV is stale).
      const int accepted = AcceptedDrafts(s, emitted);
      computed -= s.num_draft_tokens - accepted;
      NoteSpecResult(req, s.num_draft_tokens, accepted);
      kv_.Truncate(req->id, s.start_pos + computed);
    }
    req->num_computed_tokens += computed;
    if (kv_.has_window()) {
      kv_.ReleaseOutsideWindow(req->id, req->num_computed_tokens);
    }
    if (!s.prompt_targets.empty()) {
      for (const PromptLogprobs& p : prompt_logprobs) {
        if (p.id == s.id) EmitPromptLogprobs(req, p);
      }
    }
    if (!s.needs_logits || emitted.empty()) CommitKv(req);
    if (!s.needs_logits) continue;
    if (emitted.empty()) {
      FinishRequest(req, FinishReason::kError,
                    "internal: the executor returned no token");
      continue;
    }
    AppendTokens(req, emitted);  // commits once the tokens are in
  }
}

}  // namespace weft::engine
