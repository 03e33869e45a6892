// Engine: the step loop. One thread owns the loop (Schedule -> Execute ->
// Update -> deliver events); any thread may Submit, Abort or Finish.
// Results go to a per-request callback invoked on the loop thread, outside
// the engine's lock; it must not block (push into an EventChannel or similar).
//
// Thread safety: all public methods are thread-safe. The scheduler is
// guarded by mu_, which the loop does not hold while the executor runs, so
// submissions and aborts never wait for a forward pass. A request aborted
// during a pass has its blocks freed at once; nothing reuses them before
// the pass ends, because only the loop allocates.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/executor.h"
#include "engine/scheduler.h"

namespace weft::engine {

using EventCallback = std::function<void(const RequestEvent&)>;

// An unbounded multi-producer queue of events: Push never blocks (the loop
// side), Pop waits (the consumer side, e.g. an HTTP handler).
class EventChannel {
 public:
  void Push(RequestEvent ev);
  // The next event, or nullopt after timeout_ms (< 0: wait forever).
  std::optional<RequestEvent> Pop(int timeout_ms = -1);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<RequestEvent> q_;
};

class Engine {
 public:
  // Starts the step loop.
  static StatusOr<std::unique_ptr<Engine>> Create(
      const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
      std::unique_ptr<Executor> executor);
  // Aborts what is still live (callbacks see kAborted) and joins the loop.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Queues a request; validation errors come back here, everything after
  // (tokens, the finish) through `on_event`, the last event finished.
  Status Submit(RequestSpec spec, EventCallback on_event);
  // Finishes a live request (kAborted); NOT_FOUND if it is not live.
  Status Abort(RequestId id);
  // The stop-string hook: finish with `reason` (usually kStop). Safe to call
  // from inside a callback: no further token is generated for the request.
  Status Finish(RequestId id, FinishReason reason);
  // Blocks until no request is waiting or running.
  void WaitUntilIdle();
  SchedulerStats stats();
  kv::BlockPoolStats kv_stats();

 private:
  Engine(std::unique_ptr<Scheduler> scheduler,
         std::unique_ptr<Executor> executor);
  void Loop();
  using Delivery = std::pair<EventCallback, RequestEvent>;
  // Takes the scheduler's events with their callbacks. REQUIRES: mu_ held.
  std::vector<Delivery> TakeDeliveries();
  // Calls the callbacks (loop thread, without mu_).
  static void Deliver(std::vector<Delivery>& out);

  std::unique_ptr<Executor> executor_;  // loop thread only
  std::mutex mu_;
  std::condition_variable work_cv_;  // new work or stop
  std::condition_variable idle_cv_;  // the scheduler went idle
  std::unique_ptr<Scheduler> scheduler_;                   // guarded by mu_
  std::unordered_map<RequestId, EventCallback> callbacks_;  // guarded by mu_
  bool pending_events_ = false;  // guarded by mu_: aborts to deliver
  bool stop_ = false;            // guarded by mu_
  bool busy_ = false;            // guarded by mu_: a pass or delivery runs
  std::thread loop_;
};

}  // namespace weft::engine
