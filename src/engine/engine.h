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
//
// Observability: the loop times its phases (schedule, execute = forward +
// sample, update, emit) and counts decode and prefill tokens per pass;
// loop_stats() has the running totals. With EngineOptions::trace_path it
// also writes a JSON-lines trace of every pass and every request
// (engine/trace.h, docs/trace.md), buffered and flushed once per loop
// iteration outside the lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/executor.h"
#include "engine/scheduler.h"
#include "engine/trace.h"

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

// Engine options beyond the scheduling policy.
struct EngineOptions {
  // JSON-lines trace of every pass and request (docs/trace.md); empty = off.
  std::string trace_path;
  // Append to trace_path instead of truncating it (several runs, one file).
  bool trace_append = false;
  // The guesses of SchedulerConfig::spec_method kDraft (a draft model,
  // runtime/draft_proposer.h); null otherwise. The scheduler calls it
  // under the engine's lock (ProposeBatch inside Schedule, on the loop
  // thread, before the pass it drafts for). Read its own state only while
  // the engine is idle.
  std::shared_ptr<Proposer> proposer;
};

// Totals since the engine started (loop_stats()). Means: total / passes.
struct EngineStats {
  int64_t num_passes = 0;          // non-empty plans executed
  int64_t num_failed_passes = 0;   // the executor returned an error
  int64_t num_decode_tokens = 0;   // single-token decodes fed
  int64_t num_prefill_tokens = 0;  // prompt/recompute tokens fed
  int64_t num_admitted = 0;        // sequences (re)admitted to running
  int64_t num_preempted = 0;       // preemptions
  int64_t peak_running = 0;        // most sequences in one pass
  double schedule_ms = 0;          // Scheduler::Schedule + taking events
  double execute_ms = 0;           // Executor::Execute
  double forward_ms = 0;           // of execute, when the executor reports
  double sample_ms = 0;            // of execute, when the executor reports
  double update_ms = 0;            // Scheduler::Update + taking events
  double emit_ms = 0;              // event callbacks
  double trace_ms = 0;             // formatting and writing the trace
  int64_t trace_lines = 0;         // trace records written
  bool trace_failed = false;       // the trace hit a write error

  double Mean(double total_ms) const {
    return num_passes > 0 ? total_ms / static_cast<double>(num_passes) : 0;
  }
};

class Engine {
 public:
  // Starts the step loop. Errors: invalid config, or the trace file cannot
  // be opened.
  static StatusOr<std::unique_ptr<Engine>> Create(
      const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
      std::unique_ptr<Executor> executor, const EngineOptions& options);
  static StatusOr<std::unique_ptr<Engine>> Create(
      const SchedulerConfig& config, const kv::KvCacheConfig& kv_config,
      std::unique_ptr<Executor> executor) {
    return Create(config, kv_config, std::move(executor), EngineOptions());
  }
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
  // Loop phase times and token counts (totals; see EngineStats::Mean).
  EngineStats loop_stats();
  // The scheduler's pass cost model (SchedulerConfig::target_itl_ms).
  PassCostSnapshot pass_cost();

 private:
  using Clock = std::chrono::steady_clock;
  Engine(std::unique_ptr<Scheduler> scheduler,
         std::unique_ptr<Executor> executor,
         std::unique_ptr<TraceWriter> trace);
  void Loop();
  // Loop's ending: aborts every live request and delivers the events.
  // REQUIRES: lock holds mu_; returns without it.
  void AbortLiveOnStop(std::unique_lock<std::mutex>& lock);
  using Delivery = std::pair<EventCallback, RequestEvent>;
  // Takes the scheduler's events with their callbacks; with tracing, notes
  // token times and moves finished requests' records to done_traces_.
  // REQUIRES: mu_ held.
  std::vector<Delivery> TakeDeliveries();
  // Calls the callbacks (loop thread, without mu_).
  static void Deliver(std::vector<Delivery>& out);
  // Pass counts from the plan; with tracing, notes admissions and
  // preemptions. REQUIRES: mu_ held.
  void NotePlan(const StepPlan& plan, PassTrace* pass);
  // Each speculating sequence's drafted and accepted tokens, for the trace.
  static void NoteSpec(const StepPlan& plan,
                       const std::vector<SampledToken>& sampled,
                       PassTrace* pass);
  double NowMs() const;
  // Feeds the scheduler's pass cost model; with tracing, writes the model
  // when it becomes ready and every 64 passes. REQUIRES: mu_ held.
  void ObservePass(const StepPlan& plan, double ms);

  std::unique_ptr<Executor> executor_;  // loop thread only
  std::mutex mu_;
  std::condition_variable work_cv_;  // new work or stop
  std::condition_variable idle_cv_;  // the scheduler went idle
  std::unique_ptr<Scheduler> scheduler_;                   // guarded by mu_
  std::unordered_map<RequestId, EventCallback> callbacks_;  // guarded by mu_
  // Guarded by mu_: when each request not yet scheduled was submitted, and,
  // once scheduled, its queue time until its final event.
  std::unordered_map<RequestId, std::chrono::steady_clock::time_point>
      submitted_at_;
  std::unordered_map<RequestId, double> queue_seconds_;
  bool pending_events_ = false;  // guarded by mu_: aborts to deliver
  bool stop_ = false;            // guarded by mu_
  bool busy_ = false;            // guarded by mu_: a pass or delivery runs
  const Clock::time_point start_ = Clock::now();
  EngineStats loop_stats_;                      // guarded by mu_
  std::unique_ptr<TraceWriter> trace_;          // loop thread only
  bool tracing_ = false;                        // const after construction
  // Records of live requests, only while tracing. Guarded by mu_.
  std::unordered_map<RequestId, RequestTrace> traces_;
  std::vector<RequestTrace> done_traces_;  // guarded by mu_: to write
  std::thread loop_;
};

}  // namespace weft::engine
