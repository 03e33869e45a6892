// The measuring half of `weft bench model` (apps/bench/bench_model.cc): the
// read bandwidth and compute ceilings, the prompt, generation and batched
// decode tests at each context depth, each test's JSON and table row.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/bench/bench_stats.h"
#include "kernels/bandwidth.h"
#include "kernels/compute_peak.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "util/status.h"

namespace weft::apps {

// What the tests run: the checked flags of `weft bench model`.
struct ModelBenchPlan {
  // Compute threads (the caller included).
  int threads = 2;
  // Timed repetitions after one warm-up.
  int reps = 5;
  // Prompt tokens of the prefill test; 0 = skip.
  int64_t pp = 512;
  // Tokens of the generation test; 0 = skip.
  int64_t tg = 128;
  // Context tokens of each sequence in the batched decode test (without
  // depths).
  int64_t ctx = 256;
  // Batch sizes of the decode curve; empty = skip.
  std::vector<int> batches;
  // Context depths of every test; {0} without --depth.
  std::vector<int> depths = {0};
  // Whether --depth was given (the rows and JSON name their depth).
  bool by_depth = false;
  // KV cache storage.
  model::KvType kv_type = model::KvType::kF16;
};

// Runs the tests of one `weft bench model` invocation and collects their
// figures. Not thread-safe; one instance per run.
class ModelBench {
 public:
  // REQUIRES: `m` outlives the bench.
  ModelBench(const model::Model& m, ModelBenchPlan plan);

  // Measures the read bandwidth and compute ceilings (a pool of the run's
  // size, then released) and, when a decode test will run, allocates the
  // paired probe. Call once, before RunDepth.
  void MeasureCeilings();
  // The prompt, generation and decode-curve tests at one context depth.
  Status RunDepth(int depth);
  // The bandwidth probe again, after the tests.
  double MeasureBandwidthAfter();
  // The JSON of the ceilings and tests so far (after RunDepth for every
  // depth: pp, tg and decode as one object or, by depth, as arrays).
  nlohmann::json Json() const;

  double bandwidth() const { return bandwidth_; }
  const kernels::ComputePeaks& peaks() const { return peaks_; }
  uint64_t weight_bytes() const { return wbytes_; }
  const WeightMacs& weight_macs() const { return wmacs_; }
  // The table rows (markdown), one per test.
  const std::string& table() const { return table_; }

 private:
  Status RunPrompt(int depth, model::KvStorage* kv, const std::string& at);
  Status RunGeneration(int depth, model::KvStorage* kv, const std::string& at);
  Status RunCurve(int depth, const std::string& at);
  // Prefills positions [0, n) of `seq` with random tokens, in chunks.
  Status Prefill(model::KvStorage* kv, int32_t seq, int32_t n);
  std::vector<int32_t> RandomTokens(int64_t n);
  // Untimed ahead of timed run r: the paired probe (its reading kept for
  // r > 0; r == 0 starts a new test).
  Status ProbeBefore(int r);
  // Weight-product operations (2 per multiply-add) of `tokens` tokens of
  // which `logit_rows` want logits.
  double Ops(double tokens, double logit_rows) const;
  // GB/s of weights `steps` decode steps read in `seconds`.
  double WeightsGbs(double steps, double seconds) const;
  // Median over the timed runs of (weights GB/s of the run, `steps`
  // steps) / (its probe), in %.
  double PairedPct(const Stat& st, double steps) const;
  // Seconds the weight products of `tokens` tokens (`logit_rows` of them
  // with logits) take at least at the measured ceilings; 0 if unmeasured.
  double FloorSeconds(double tokens, double logit_rows) const;
  // The weights-plus-KV read floor of a step reading `kv` KV bytes (s).
  double ReadFloorSeconds(double kv) const;
  // KV bytes one token at position n - 1 reads (n positions of its
  // sequence), all layers: sliding-window layers read only their window.
  double KvRead(int64_t n) const;
  // One table line; `steps` Forward calls made `tokens` tokens and `gops`
  // weight-product GOP/s; `floor`: the compute floor of all of them (s);
  // ratio > 0: the step as a multiple of step(B=1); paired: % of the
  // paired probe (decode only); kv: KV bytes a step reads (decode only).
  void Row(const std::string& test, const Stat& st, double tokens, double steps, bool decode,
           double gops, double floor, double ratio, double paired, double kv);

  const model::Model& m_;
  const model::ModelConfig& c_;
  const ModelBenchPlan plan_;
  model::ForwardOptions opts_;
  kernels::ThreadPoolOptions probe_pool_options_;
  const uint64_t wbytes_;
  const WeightMacs wmacs_;
  const int64_t k_bytes_;  // one K row of the KV cache
  const int64_t v_bytes_;  // one V row
  std::mt19937 rng_{1234};
  double bandwidth_ = 0;
  kernels::ComputePeaks peaks_;
  std::optional<kernels::ThreadPool> paired_pool_;
  std::optional<kernels::ReadBandwidthProbe> paired_probe_;
  std::vector<double> probes_;  // the current test's, one per timed run
  std::vector<float> prefill_logits_;
  std::string table_;
  nlohmann::json pp_json_ = nlohmann::json::array();
  nlohmann::json tg_json_ = nlohmann::json::array();
  nlohmann::json curves_ = nlohmann::json::array();
};

}  // namespace weft::apps
