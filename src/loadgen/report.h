// Summaries of a serving benchmark run, its JSON result document and the
// markdown report (rendered from the JSON, so `plot` and `compare` see the
// same numbers).
//
// JSON layout (version 1): {"format": "weft-bench-serve", "version": 1,
// "metadata": {...}, "slo": {...}, "valid": bool, "levels": [{"mode",
// "concurrency", "rate", "summary": {...}, "samples": [...]}], "warmup":
// {...}}. Times in samples are seconds; summary latencies are ms.
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "loadgen/runner.h"
#include "loadgen/stats.h"

namespace weft::loadgen {

// S2: the background streams' inter-token latency while a long prompt is
// being prefilled (from its send to its first token).
struct StallSummary {
  Distribution itl_all_ms;      // every background ITL sample
  Distribution itl_prefill_ms;  // background ITL gaps overlapping a prefill
  Distribution long_ttft_ms;    // the long requests' TTFT
  int64_t long_requests = 0;    // long requests seen
  std::optional<bool> stall_free;  // max prefill ITL <= 2 x p50 of all;
                                   // unset when no gap overlapped a prefill
};

struct LevelSummary {
  std::string mode;             // "closed", "open", "stall"
  int64_t concurrency = 0;      // closed/stall
  double rate = 0;              // open: requests/s
  int64_t requests = 0;         // finished (ok + failed)
  int64_t completed = 0;        // ok
  int64_t failed = 0;
  std::map<std::string, int64_t> failures;  // kind (or "http_<code>") -> count
  double duration_s = 0;        // first send to last completion
  double request_throughput = 0;   // completed / duration
  double output_throughput = 0;    // output tokens / duration
  double total_token_throughput = 0;  // (prompt + output) tokens / duration
  int64_t output_tokens = 0;    // of completed requests
  int64_t prompt_tokens = 0;    // reported (or planned) prompt tokens
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
  int64_t token_mismatches = 0;  // completion_tokens != max_tokens
  int64_t usage_missing = 0;     // no usage chunk: tokens were counted
  int64_t prompt_mismatches = 0;  // usage.prompt_tokens != planned
  bool valid = true;             // no token mismatches (with ignore_eos)
  std::optional<double> goodput;  // requests/s meeting the SLO (when set)
  std::optional<double> slo_attainment;  // fraction of requests meeting it
  std::optional<StallSummary> stall;     // stall-test levels
};

// `check_tokens`: verify completion_tokens == max_tokens (ignore_eos).
LevelSummary SummarizeLevel(const LevelResult& level, const Slo& slo,
                            bool check_tokens);
StallSummary SummarizeStall(const std::vector<RequestResult>& requests);

// Run metadata recorded in the JSON and the markdown header.
struct RunMetadata {
  std::string command_line;  // as typed
  std::string time_utc;      // ISO 8601
  std::string url;           // server
  std::string model;         // model name used (or reported by /v1/models)
  std::string label;         // short name for plots/compare
  std::string weft_version;  // version (commit) of this client
  nlohmann::json workload = nlohmann::json::object();  // workload params
  nlohmann::json config = nlohmann::json::object();    // run settings
  nlohmann::json server = nullptr;  // GET /v1/effective-config, if served
};

// Capacity under an SLO: the highest open-loop rate at which at least this
// fraction of requests met it (vLLM / DistServe's "max rate at 90%
// attainment").
inline constexpr double kCapacityAttainment = 0.9;

nlohmann::json DistributionJson(const Distribution& d);
// {"attainment", "max_rate", "goodput_at_max_rate"} over the open-loop
// levels, max_rate null when none kept the attainment; null without an
// SLO or without open-loop levels.
nlohmann::json CapacityJson(const nlohmann::json& levels, const Slo& slo);
nlohmann::json SummaryJson(const LevelSummary& s);
nlohmann::json SampleJson(const RequestResult& r);

// The whole result document.
nlohmann::json ResultJson(const RunMetadata& meta, const RunResult& run,
                          const Slo& slo, bool check_tokens);

// The markdown report of a result document.
std::string MarkdownReport(const nlohmann::json& doc);

// A level's short name: "c=4", "rate=2/s", "S2 c=8".
std::string LevelName(const nlohmann::json& level);

}  // namespace weft::loadgen
