#include "engine/engine.h"

#include <algorithm>
#include <chrono>

#include "util/log.h"
#include "util/strings.h"

namespace weft::engine {

void EventChannel::Push(RequestEvent ev) {
  // Notify under the lock: a consumer that pops the final event may destroy
  // the channel right away.
  std::lock_guard<std::mutex> lock(mu_);
  q_.push_back(std::move(ev));
  cv_.notify_one();
}

std::optional<RequestEvent> EventChannel::Pop(int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return !q_.empty(); };
  if (timeout_ms < 0) {
    cv_.wait(lock, ready);
  } else if (!cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                           ready)) {
    return std::nullopt;
  }
  RequestEvent ev = std::move(q_.front());
  q_.pop_front();
  return ev;
}

namespace {

double Ms(std::chrono::steady_clock::time_point a,
          std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Adds a pass's counts and times to the loop's totals; only its emit time
// when nothing was planned.
void AddPassStats(const PassTrace& pass, bool planned, EngineStats* st) {
  if (planned) {
    ++st->num_passes;
    st->num_failed_passes += pass.ok ? 0 : 1;
    st->num_decode_tokens += pass.decode;
    st->num_prefill_tokens += pass.prefill_tokens;
    st->num_admitted += pass.admitted;
    st->num_preempted += pass.preempted;
    st->peak_running = std::max<int64_t>(st->peak_running, pass.running);
    st->schedule_ms += pass.schedule_ms;
    st->execute_ms += pass.execute_ms;
    st->forward_ms += std::max(0.0, pass.forward_ms);
    st->sample_ms += std::max(0.0, pass.sample_ms);
    st->update_ms += pass.update_ms;
  }
  st->emit_ms += pass.emit_ms;
}

}  // namespace

StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
    std::unique_ptr<Executor> executor, const EngineOptions& options) {
  if (executor == nullptr) return InvalidArgumentError("no executor");
  ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler,
                   Scheduler::Create(config, kv_config, options.proposer));
  std::unique_ptr<TraceWriter> trace;
  if (!options.trace_path.empty()) {
    ASSIGN_OR_RETURN(trace,
                     TraceWriter::Open(options.trace_path, options.trace_append));
    TraceStart ts;
    ts.unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
    ts.max_batched_tokens = config.max_batched_tokens;
    ts.prefill_chunk = config.prefill_chunk;
    ts.idle_prefill_tokens = config.idle_prefill_tokens;
    ts.max_seqs = config.max_seqs;
    ts.target_itl_ms = config.target_itl_ms;
    ts.target_itl_ratio = config.target_itl_ratio;
    ts.policy = config.policy == SchedulingPolicy::kPriority ? "priority"
                                                              : "fcfs";
    trace->AddStart(ts);
    trace->Flush();
  }
  return std::unique_ptr<Engine>(new Engine(
      std::move(scheduler), std::move(executor), std::move(trace)));
}

Engine::Engine(std::unique_ptr<Scheduler> scheduler,
               std::unique_ptr<Executor> executor,
               std::unique_ptr<TraceWriter> trace)
    : executor_(std::move(executor)),
      scheduler_(std::move(scheduler)),
      trace_(std::move(trace)),
      tracing_(trace_ != nullptr) {
  loop_ = std::thread([this] { Loop(); });
}

double Engine::NowMs() const { return Ms(start_, Clock::now()); }

void Engine::ObservePass(const StepPlan& plan, double ms) {
  // The engine's first pass pays for first-touch page faults of the
  // weights: not what a pass of its shape costs.
  if (plan.step <= 1) return;
  // The draft model's forwards are priced apart (Scheduler's draft step
  // cost): the model fits the target's pass.
  scheduler_->ObservePass(plan, ms - plan.draft_ms);
  if (trace_ == nullptr) return;
  const PassCostSnapshot c = scheduler_->cost_model().snapshot();
  const int64_t first = scheduler_->config().cost_model_min_samples;
  if (c.samples != first && (c.samples < first || c.samples % 64 != 0)) return;
  trace_->AddCostModel({plan.step, c});  // flushed with the next pass
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  loop_.join();
}

Status Engine::Submit(RequestSpec spec, EventCallback on_event) {
  RETURN_IF_ERROR(executor_->ValidateRequest(spec));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_) return UnavailableError("engine is shutting down");
    const RequestId id = spec.id;
    if (callbacks_.count(id)) {  // live, or its final event not yet delivered
      return InvalidArgumentError(
          StrFormat("request id %lld is in use", (long long)id));
    }
    RETURN_IF_ERROR(scheduler_->Submit(std::move(spec)));
    callbacks_[id] = std::move(on_event);
    submitted_at_[id] = Clock::now();
    if (tracing_) {
      RequestTrace& t = traces_[id];
      t = RequestTrace();
      t.id = id;
      t.queued_ms = NowMs();
    }
  }
  work_cv_.notify_one();
  return OkStatus();
}

Status Engine::Abort(RequestId id) { return Finish(id, FinishReason::kAborted); }

Status Engine::Finish(RequestId id, FinishReason reason) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    RETURN_IF_ERROR(scheduler_->Finish(id, reason));
    pending_events_ = true;
  }
  work_cv_.notify_one();
  return OkStatus();
}

void Engine::WaitUntilIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [this] {
    return stop_ || (!scheduler_->HasWork() && !pending_events_ && !busy_);
  });
}

SchedulerStats Engine::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->stats();
}

kv::BlockPoolStats Engine::kv_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->kv().stats();
}

EngineStats Engine::loop_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return loop_stats_;
}

PassCostSnapshot Engine::pass_cost() {
  std::lock_guard<std::mutex> lock(mu_);
  return scheduler_->cost_model().snapshot();
}

std::vector<Engine::Delivery> Engine::TakeDeliveries() {
  std::vector<Delivery> out;
  const double now = tracing_ ? NowMs() : 0;
  for (RequestEvent& ev : scheduler_->TakeEvents()) {
    auto it = callbacks_.find(ev.id);
    if (it == callbacks_.end()) continue;
    if (tracing_) {
      auto t = traces_.find(ev.id);
      if (t != traces_.end()) {
        RequestTrace& rec = t->second;
        if (!ev.new_tokens.empty() && rec.first_token_ms < 0) {
          rec.first_token_ms = now;
        }
        rec.token_ms.insert(rec.token_ms.end(), ev.new_tokens.size(), now);
        if (ev.finished) {
          rec.finished_ms = now;
          rec.prompt_tokens = ev.num_prompt_tokens;
          rec.cached_tokens = ev.num_cached_tokens;
          rec.generated_tokens = ev.num_output_tokens;
          rec.finish = FinishReasonName(ev.reason).data();
          done_traces_.push_back(std::move(rec));
          traces_.erase(t);
        }
      }
    }
    if (ev.finished) {
      submitted_at_.erase(ev.id);
      if (auto q = queue_seconds_.find(ev.id); q != queue_seconds_.end()) {
        ev.queue_seconds = q->second;
        queue_seconds_.erase(q);
      }
      out.emplace_back(std::move(it->second), std::move(ev));
      callbacks_.erase(it);
    } else {
      out.emplace_back(it->second, std::move(ev));
    }
  }
  pending_events_ = false;
  return out;
}

void Engine::NotePlan(const StepPlan& plan, PassTrace* pass) {
  const double now = tracing_ ? NowMs() : 0;
  pass->step = plan.step;
  pass->seqs = static_cast<int>(plan.seqs.size());
  pass->tokens = plan.num_batched_tokens;
  pass->budget = plan.budget;
  pass->draft_ms = plan.draft_ms;
  pass->preempted = static_cast<int>(plan.preempted.size());
  for (const ScheduledSeq& s : plan.seqs) {
    // A decode: one token past the prompt that completes the sequence (the
    // scheduler's own test: only the last token is uncomputed).
    if (s.num_new_tokens - s.num_draft_tokens == 1 && s.needs_logits &&
        s.start_pos >= s.num_prompt_tokens) {
      ++pass->decode;
    } else {
      ++pass->prefill_seqs;
      pass->prefill_tokens += s.num_new_tokens;
    }
    if (s.admitted) ++pass->admitted;
    if (auto q = submitted_at_.find(s.id); q != submitted_at_.end()) {
      queue_seconds_[s.id] =
          std::chrono::duration<double>(Clock::now() - q->second).count();
      submitted_at_.erase(q);
    }
    if (tracing_ && s.admitted) {
      auto t = traces_.find(s.id);
      if (t != traces_.end() && t->second.scheduled_ms < 0) {
        t->second.scheduled_ms = now;
      }
    }
  }
  if (tracing_) {
    for (RequestId id : plan.preempted) {
      auto t = traces_.find(id);
      if (t != traces_.end()) ++t->second.preemptions;
    }
  }
  pass->running = scheduler_->num_running();
  pass->waiting = scheduler_->num_waiting();
}

void Engine::NoteSpec(const StepPlan& plan,
                      const std::vector<SampledToken>& sampled,
                      PassTrace* pass) {
  std::vector<const SampledToken*> emitted;
  for (const ScheduledSeq& s : plan.seqs) {
    if (s.num_draft_tokens == 0) continue;
    emitted.clear();
    for (const SampledToken& t : sampled) {
      if (t.id == s.id) emitted.push_back(&t);
    }
    pass->spec.push_back({s.id, s.num_draft_tokens,
                          AcceptedDrafts(s, emitted)});
  }
}

void Engine::Deliver(std::vector<Delivery>& out) {
  for (auto& [cb, ev] : out) {
    if (cb) cb(ev);
  }
  out.clear();
}

void Engine::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] {
      return stop_ || scheduler_->HasWork() || pending_events_;
    });
    if (stop_) break;
    busy_ = true;
    const Clock::time_point t0 = Clock::now();
    PassTrace pass;
    pass.t_ms = Ms(start_, t0);
    StepPlan plan = scheduler_->Schedule();
    std::vector<Delivery> out = TakeDeliveries();
    if (!plan.empty()) NotePlan(plan, &pass);
    const Clock::time_point t1 = Clock::now();
    pass.schedule_ms = Ms(t0, t1);
    if (!plan.empty()) {
      lock.unlock();
      Deliver(out);
      const Clock::time_point t2 = Clock::now();
      pass.emit_ms = Ms(t1, t2);
      StatusOr<std::vector<SampledToken>> sampled = executor_->Execute(plan);
      const Clock::time_point t3 = Clock::now();
      pass.execute_ms = Ms(t2, t3);
      const std::vector<PromptLogprobs> prompt_lps =
          executor_->TakePromptLogprobs();
      pass.forward_ms = executor_->LastExecuteTimes().forward_ms;
      pass.sample_ms = executor_->LastExecuteTimes().sample_ms;
      lock.lock();
      if (sampled.ok()) {
        if (tracing_) NoteSpec(plan, *sampled, &pass);
        scheduler_->Update(plan, *sampled, prompt_lps);
      } else {
        pass.ok = false;
        LOG(ERROR) << "step " << plan.step
                   << " failed: " << sampled.status().ToString();
        for (const ScheduledSeq& s : plan.seqs) {
          (void)scheduler_->Finish(s.id, FinishReason::kError,
                                   sampled.status().ToString());
        }
      }
      out = TakeDeliveries();
      pass.update_ms = Ms(t3, Clock::now());
      for (const Delivery& d : out) pass.finished += d.second.finished ? 1 : 0;
    }
    std::vector<RequestTrace> done;
    done.swap(done_traces_);
    lock.unlock();
    const Clock::time_point t4 = Clock::now();
    Deliver(out);
    const Clock::time_point t5 = Clock::now();
    pass.emit_ms += Ms(t4, t5);
    pass.pass_ms = Ms(t0, t5);
    pass.predicted_ms = plan.predicted_ms;
    pass.target_ms = plan.target_ms;
    if (trace_ != nullptr) {
      if (!plan.empty()) trace_->AddPass(pass);
      for (const RequestTrace& r : done) trace_->AddRequest(r);
      trace_->Flush();
    }
    const Clock::time_point t6 = Clock::now();
    lock.lock();
    EngineStats& st = loop_stats_;
    AddPassStats(pass, !plan.empty(), &st);
    if (!plan.empty() && pass.ok) ObservePass(plan, pass.pass_ms);
    if (trace_ != nullptr) {
      st.trace_ms += Ms(t5, t6);
      st.trace_lines = trace_->lines();
      st.trace_failed = trace_->failed();
    }
    busy_ = false;
    if (plan.empty() && scheduler_->HasWork() && !pending_events_ && !stop_) {
      // Cannot happen by the scheduler's design; do not spin if it does.
      LOG(ERROR) << "scheduler has work but planned nothing";
      work_cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    if (!scheduler_->HasWork() && !pending_events_) idle_cv_.notify_all();
  }
  AbortLiveOnStop(lock);
}

void Engine::AbortLiveOnStop(std::unique_lock<std::mutex>& lock) {
  std::vector<RequestId> live;
  for (const auto& [id, cb] : callbacks_) live.push_back(id);
  for (RequestId id : live) (void)scheduler_->Abort(id);
  std::vector<Delivery> out = TakeDeliveries();
  std::vector<RequestTrace> done;
  done.swap(done_traces_);
  busy_ = false;
  idle_cv_.notify_all();
  lock.unlock();
  Deliver(out);
  if (trace_ != nullptr) {
    for (const RequestTrace& r : done) trace_->AddRequest(r);
    trace_->Flush();
  }
}

}  // namespace weft::engine
