// Engine trace: an optional JSON-lines file with one object per line,
// written by the engine's step loop (docs/trace.md has the full schema).
//
//   {"ev":"start","unix_ms":...,"max_batched_tokens":...,"prefill_chunk":...,
//    "idle_prefill_tokens":...,"max_seqs":...,"target_itl_ms":...|null,
//    "target_itl_ratio":...|null,
//    "policy":"fcfs|priority"}
//   {"ev":"pass","step":N,"t_ms":...,"seqs":...,"decode":...,
//    "prefill_seqs":...,"prefill_tokens":...,"tokens":...,"budget":...,
//    "admitted":...,"preempted":...,"running":...,"waiting":...,
//    "finished":...,"ok":true,"schedule_ms":...,"execute_ms":...,
//    "forward_ms":...|null,"sample_ms":...|null,"update_ms":...,
//    "emit_ms":...,"pass_ms":...,"predicted_ms":...|null,
//    "target_ms":...|null}
//   {"ev":"cost_model","step":N,"samples":...,"fixed_ms":...,
//    "per_token_ms":...,"per_logit_row_ms":...,"per_1k_context_ms":...,
//    "rms_ms":...}
//   {"ev":"request","id":N,"queued_ms":...,"scheduled_ms":...|null,
//    "first_token_ms":...|null,"finished_ms":...,"prompt_tokens":...,
//    "cached_tokens":...,"generated_tokens":...,"preemptions":...,
//    "finish":"stop|length|abort|error","token_ms":[...]}
//
// Times are milliseconds since the engine started (steady clock). Only
// numbers, booleans, null and fixed words are written: never user text.
// Invariant of a pass record: decode + prefill_tokens == tokens <= budget.
// A file may hold several engine runs, each beginning with a start record.
//
// TraceWriter formats records into a memory buffer; Flush() writes the
// buffer with one fwrite + fflush (the engine calls it once per loop
// iteration, outside its lock). A failed write disables the writer (logged
// once) instead of failing the engine.
//
// Thread safety: none; the engine's loop thread owns the writer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "engine/pass_cost_model.h"
#include "util/status.h"

namespace weft::engine {

// One forward pass (one loop iteration with a non-empty plan).
// One sequence's speculative verification in a pass.
struct SpecTrace {
  int64_t id = 0;    // the request
  int drafted = 0;   // guesses verified
  int accepted = 0;  // of them, confirmed
};

struct PassTrace {
  uint64_t step = 0;       // the plan's step number
  double t_ms = 0;         // when the pass started (before Schedule)
  int seqs = 0;            // scheduled sequences
  int decode = 0;          // of them, single-token decodes
  int prefill_seqs = 0;    // the others (prompt chunks, recomputes)
  int prefill_tokens = 0;  // their tokens
  int tokens = 0;          // num_batched_tokens (budget used)
  int budget = 0;          // max_batched_tokens
  int admitted = 0;        // sequences (re)admitted in this pass
  int preempted = 0;       // requests preempted by this pass
  int running = 0;         // running requests after scheduling
  int waiting = 0;         // waiting requests after scheduling
  int finished = 0;        // requests whose final event this pass sent
  bool ok = true;          // false: the executor failed the pass
  double schedule_ms = 0;  // Scheduler::Schedule + taking events
  double execute_ms = 0;   // Executor::Execute, all of it
  double forward_ms = -1;  // as the executor reports it; < 0: unknown
  double sample_ms = -1;   // as the executor reports it; < 0: unknown
  double update_ms = 0;    // Scheduler::Update + taking events
  double emit_ms = 0;      // running the event callbacks
  double pass_ms = 0;      // Schedule to the last event delivered (what
                           // the pass cost model is fit to)
  double predicted_ms = -1;  // the cost model's prediction; < 0: none
  double target_ms = -1;     // the latency target it was sized for; < 0
  double draft_ms = 0;       // of schedule_ms, the draft model's forwards
                             // (written only when > 0)
  // Sequences that verified draft tokens (written only when non-empty).
  std::vector<SpecTrace> spec;
};

// The pass cost model (engine/pass_cost_model.h), written when it becomes
// ready and every 64 passes after.
struct CostModelTrace {
  uint64_t step = 0;  // the last pass it has seen
  PassCostSnapshot model;
};

// One request, written when its final event is delivered.
struct RequestTrace {
  int64_t id = 0;
  double queued_ms = 0;        // Submit accepted it
  double scheduled_ms = -1;    // first admitted to a pass; < 0: never
  double first_token_ms = -1;  // first token delivered; < 0: none
  double finished_ms = 0;      // final event delivered
  int prompt_tokens = 0;
  int cached_tokens = 0;  // prompt tokens served by the prefix cache
  int generated_tokens = 0;
  int preemptions = 0;
  const char* finish = "none";   // FinishReasonName (a fixed word)
  std::vector<double> token_ms;  // delivery time of every token
};

// Settings written in the start record.
struct TraceStart {
  int64_t unix_ms = 0;
  int max_batched_tokens = 0;
  int prefill_chunk = 0;
  int idle_prefill_tokens = 0;
  int max_seqs = 0;
  double target_itl_ms = 0;  // 0: off
  double target_itl_ratio = 0;  // 0: off
  const char* policy = "fcfs";  // scheduling policy (a fixed word)
};

class TraceWriter {
 public:
  // Creates (append = false: truncates) or appends to `path`.
  static StatusOr<std::unique_ptr<TraceWriter>> Open(const std::string& path,
                                                     bool append);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  void AddStart(const TraceStart& s);
  void AddPass(const PassTrace& p);
  void AddRequest(const RequestTrace& r);
  void AddCostModel(const CostModelTrace& c);
  // Writes what is buffered. No-op after a write error.
  void Flush();

  int64_t lines() const { return lines_; }            // records formatted
  bool failed() const { return failed_; }             // a write failed
  const std::string& buffer() const { return buf_; }  // for tests

 private:
  TraceWriter(std::FILE* f, std::string path);
  void Line(const std::string& s);

  std::FILE* f_;
  std::string path_;
  std::string buf_;
  int64_t lines_ = 0;
  bool failed_ = false;
};

// Formatting helpers, exposed for tests: "%.3f" of ms, or "null" if < 0.
std::string TraceMs(double ms);

}  // namespace weft::engine
