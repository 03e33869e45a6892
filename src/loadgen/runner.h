// Drives a serving benchmark: warm-up, then each level of a closed-loop
// concurrency ladder or an open-loop rate list (or S2's stall schedule),
// all requests as concurrent streamed HTTP calls on one io_context thread
// (the caller's). Every request is temperature 0, ignore_eos, stream with
// stream_options.include_usage.
//
// Thread safety: a Runner is used from one thread; Run() blocks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loadgen/http_client.h"
#include "loadgen/stream.h"
#include "loadgen/workload.h"
#include "util/status.h"

namespace weft::loadgen {

struct RunConfig {
  Endpoint endpoint;                 // the server
  std::string model;                 // "model" field; empty = omitted
  bool chat = false;                 // /v1/chat/completions instead
  bool ignore_eos = true;            // ask for exactly max_tokens
  std::optional<bool> speculative;   // the "speculative" field; unset = omitted
  double timeout_s = 300;            // longest wait for any byte / step
  std::vector<int64_t> concurrency = {1};  // closed-loop ladder
  std::vector<double> rates;         // non-empty: open loop at these req/s
  double burstiness = 1.0;           // open loop gamma shape (1 = Poisson)
  int64_t num_requests = 0;          // per level; 0 = the workload default
  double duration_s = 0;             // per level: stop issuing after; 0 = off
  int64_t warmup = 2;                // warm-up requests (not measured)
  uint64_t seed = 0;                 // arrival-time seed
  bool progress = true;              // progress bar on stderr
  // S2 (stall test) schedule; used when stall_test is set.
  bool stall_test = false;           // background streams + long arrivals
  int64_t background_streams = 8;    // closed-loop background streams
  double long_every_s = 10;          // a long request every this many s
};

// One level of the run: all its requests in completion order.
struct LevelResult {
  std::string mode;          // "closed", "open" or "stall"
  int64_t concurrency = 0;   // closed / stall: streams
  double rate = 0;           // open: requests per second
  double started_at = 0;     // seconds since the run started
  double duration_s = 0;     // first send to last completion
  std::vector<RequestResult> requests;
};

struct RunResult {
  double warmup_s = 0;             // time spent warming up
  int64_t warmup_failures = 0;     // failed warm-up requests
  std::vector<LevelResult> levels;
};

// The JSON body of one request (exposed for tests).
std::string RequestBody(const RunConfig& config, const PlannedRequest& req);

// Runs `plan` as configured. Fails only when nothing could be run (e.g.
// the address does not resolve); request failures are in the results.
StatusOr<RunResult> RunBenchmark(const RunConfig& config,
                                 const WorkloadPlan& plan);

}  // namespace weft::loadgen
