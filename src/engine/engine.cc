#include "engine/engine.h"

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

StatusOr<std::unique_ptr<Engine>> Engine::Create(
    const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
    std::unique_ptr<Executor> executor) {
  if (executor == nullptr) return InvalidArgumentError("no executor");
  ASSIGN_OR_RETURN(std::unique_ptr<Scheduler> scheduler,
                   Scheduler::Create(config, kv_config));
  return std::unique_ptr<Engine>(
      new Engine(std::move(scheduler), std::move(executor)));
}

Engine::Engine(std::unique_ptr<Scheduler> scheduler,
               std::unique_ptr<Executor> executor)
    : executor_(std::move(executor)), scheduler_(std::move(scheduler)) {
  loop_ = std::thread([this] { Loop(); });
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
  return scheduler_->kv().pool().stats();
}

std::vector<Engine::Delivery> Engine::TakeDeliveries() {
  std::vector<Delivery> out;
  for (RequestEvent& ev : scheduler_->TakeEvents()) {
    auto it = callbacks_.find(ev.id);
    if (it == callbacks_.end()) continue;
    if (ev.finished) {
      out.emplace_back(std::move(it->second), std::move(ev));
      callbacks_.erase(it);
    } else {
      out.emplace_back(it->second, std::move(ev));
    }
  }
  pending_events_ = false;
  return out;
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
    StepPlan plan = scheduler_->Schedule();
    std::vector<Delivery> out = TakeDeliveries();
    if (!plan.empty()) {
      lock.unlock();
      Deliver(out);
      StatusOr<std::vector<SampledToken>> sampled = executor_->Execute(plan);
      lock.lock();
      if (sampled.ok()) {
        scheduler_->Update(plan, *sampled);
      } else {
        LOG(ERROR) << "step " << plan.step
                   << " failed: " << sampled.status().ToString();
        for (const ScheduledSeq& s : plan.seqs) {
          (void)scheduler_->Finish(s.id, FinishReason::kError,
                                   sampled.status().ToString());
        }
      }
      out = TakeDeliveries();
    }
    lock.unlock();
    Deliver(out);
    lock.lock();
    busy_ = false;
    if (plan.empty() && scheduler_->HasWork() && !pending_events_ && !stop_) {
      // Cannot happen by the scheduler's design; do not spin if it does.
      LOG(ERROR) << "scheduler has work but planned nothing";
      work_cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    if (!scheduler_->HasWork() && !pending_events_) idle_cv_.notify_all();
  }
  // Shutting down: abort whatever is live and tell its owner.
  std::vector<RequestId> live;
  for (const auto& [id, cb] : callbacks_) live.push_back(id);
  for (RequestId id : live) (void)scheduler_->Abort(id);
  std::vector<Delivery> out = TakeDeliveries();
  busy_ = false;
  idle_cv_.notify_all();
  lock.unlock();
  Deliver(out);
}

}  // namespace weft::engine
