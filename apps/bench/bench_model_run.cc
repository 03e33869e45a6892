#include "apps/bench/bench_model_run.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <utility>

#include "kernels/isa.h"
#include "util/strings.h"

namespace weft::apps {

using json = nlohmann::json;

namespace {

// The compute floor of a test whose timed unit has the median `median`.
void PutFloor(json& j, double floor, double median) {
  if (floor <= 0) return;
  j["compute_floor_s"] = floor;
  j["compute_floor_pct"] = 100.0 * floor / median;
}

}  // namespace

ModelBench::ModelBench(const model::Model& m, ModelBenchPlan plan)
    : m_(m),
      c_(m.config()),
      plan_(std::move(plan)),
      wbytes_(WeightBytes(m.weights(), m.config().n_expert_used)),
      wmacs_(CountWeightMacs(m.weights(), m.config().n_expert_used)),
      k_bytes_(model::KvRowBytes(plan_.kv_type, c_.k_dim())),
      v_bytes_(model::KvRowBytes(plan_.kv_type, c_.v_dim())) {
  opts_.n_threads = plan_.threads;
  probe_pool_options_.num_threads = plan_.threads;
}

void ModelBench::MeasureCeilings() {
  {
    kernels::ThreadPool pool(probe_pool_options_);
    bandwidth_ = kernels::MeasureReadBandwidth(&pool);
    peaks_ = kernels::MeasureComputePeaks(&pool);
  }
  std::fprintf(stderr, "bandwidth %.1f GB/s; model %s; weights read per step %s\n",
               bandwidth_, c_.Summary().c_str(), HumanBytes(static_cast<double>(wbytes_)).c_str());
  // The paired probe: 256 MiB (past any last-level cache, a fraction of a
  // second to read) on a pool of its own whose workers sleep at once (no
  // spinning into the timed runs), best of 2 passes, 2 ms after the model's
  // last step (its workers spin that long at most).
  // Allocated only when a decode test runs (the buffer is first touched
  // here, a few tens of ms).
  kernels::ThreadPoolOptions paired_pool_options = probe_pool_options_;
  paired_pool_options.spin_iterations = 0;
  if (plan_.tg > 0 || !plan_.batches.empty()) {
    paired_pool_.emplace(paired_pool_options);
    paired_probe_.emplace(&*paired_pool_, size_t{256} << 20);
  }
}

double ModelBench::MeasureBandwidthAfter() {
  kernels::ThreadPool pool(probe_pool_options_);
  return kernels::MeasureReadBandwidth(&pool);
}

std::vector<int32_t> ModelBench::RandomTokens(int64_t n) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (auto& t : ids) t = static_cast<int32_t>(rng_() % static_cast<uint32_t>(c_.n_vocab));
  return ids;
}

Status ModelBench::ProbeBefore(int r) {
  if (r == 0) probes_.clear();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const double gbs = paired_probe_->Measure(2);
  if (r > 0) probes_.push_back(gbs);
  return OkStatus();
}

double ModelBench::Ops(double tokens, double logit_rows) const {
  return 2.0 * (static_cast<double>(wmacs_.layers) * tokens +
                static_cast<double>(wmacs_.output) * logit_rows);
}

double ModelBench::WeightsGbs(double steps, double seconds) const {
  return static_cast<double>(wbytes_) * steps / seconds / 1e9;
}

double ModelBench::PairedPct(const Stat& st, double steps) const {
  std::vector<double> pct;
  for (size_t i = 0; i < st.samples.size(); ++i) {
    pct.push_back(100.0 * WeightsGbs(steps, st.samples[i]) / probes_[i]);
  }
  return Summarize(std::move(pct)).median;
}

double ModelBench::FloorSeconds(double tokens, double logit_rows) const {
  if (!peaks_.measured()) return 0.0;
  double s = 0;
  for (int k = 0; k < kernels::kNumPeakKinds; ++k) {
    s += (static_cast<double>(wmacs_.layers_by_kind[k]) * tokens +
          static_cast<double>(wmacs_.output_by_kind[k]) * logit_rows) /
         (peaks_.gmacs[k] * 1e9);
  }
  return s;
}

double ModelBench::ReadFloorSeconds(double kv) const {
  return (static_cast<double>(wbytes_) + kv) / (bandwidth_ * 1e9);
}

double ModelBench::KvRead(int64_t n) const {
  double rows = 0;
  for (int64_t l = 0; l < c_.n_layer; ++l) {
    rows += static_cast<double>(c_.IsLocalLayer(l) ? std::min<int64_t>(n, c_.sliding_window) : n);
  }
  return rows * static_cast<double>(k_bytes_ + v_bytes_);
}

void ModelBench::Row(const std::string& test, const Stat& st, double tokens, double steps,
                     bool decode, double gops, double floor, double ratio, double paired,
                     double kv) {
  // Cells after GOP/s: floor ms/step, % floor, GB/s, % roofline, % paired,
  // KV MB/step, % read floor, ratio.
  std::string cells;
  cells += floor > 0 ? StrFormat(" %.2f | %.0f%% |", 1e3 * floor / steps,
                                 100.0 * floor / st.median)
                     : std::string(" | |");
  if (decode) {
    const double gbs = WeightsGbs(steps, st.median);
    cells += StrFormat(" %.1f | %.0f%% | %.0f%% | %.1f | %.0f%% |", gbs,
                       100.0 * gbs / bandwidth_, paired, kv / 1e6,
                       100.0 * ReadFloorSeconds(kv) * steps / st.median);
  } else {
    cells += " | | | | |";
  }
  cells += ratio > 0 ? StrFormat(" %.2f |", ratio) : std::string(" |");
  table_ += StrFormat("| %s | %.2f | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f |%s\n",
                      test.c_str(), 1e3 * st.median / steps, 1e3 * st.median,
                      1e3 * st.min, 1e3 * st.max, tokens / st.median,
                      tokens / st.max, tokens / st.min, gops, cells.c_str());
}

Status ModelBench::Prefill(model::KvStorage* kv, int32_t seq, int32_t n) {
  constexpr int32_t kChunk = 512;
  for (int32_t p = 0; p < n; p += kChunk) {
    const int32_t len = std::min(kChunk, n - p);
    RETURN_IF_ERROR(m_.Forward(model::Batch::ForPrompt(RandomTokens(len), p, seq), kv,
                               &prefill_logits_, opts_));
  }
  return OkStatus();
}

Status ModelBench::RunDepth(int depth) {
  const std::string at = plan_.by_depth ? StrFormat(" @ d%d", depth) : std::string();
  // One context of `depth` tokens for the prompt and generation tests,
  // prefilled once (each repetition truncates back to it).
  ASSIGN_OR_RETURN(
      std::unique_ptr<model::ContiguousKvStorage> ctx_kv,
      model::ContiguousKvStorage::Create(
          c_, depth + static_cast<int32_t>(std::max<int64_t>({plan_.pp, plan_.tg, 1})), 1,
          plan_.kv_type));
  if (plan_.pp > 0 || plan_.tg > 0) RETURN_IF_ERROR(Prefill(ctx_kv.get(), 0, depth));
  if (plan_.pp > 0) RETURN_IF_ERROR(RunPrompt(depth, ctx_kv.get(), at));
  if (plan_.tg > 0) RETURN_IF_ERROR(RunGeneration(depth, ctx_kv.get(), at));
  if (plan_.batches.empty()) return OkStatus();
  return RunCurve(depth, at);
}

Status ModelBench::RunPrompt(int depth, model::KvStorage* kv, const std::string& at) {
  const int64_t pp = plan_.pp;
  const model::Batch b = model::Batch::ForPrompt(RandomTokens(pp), depth);
  std::vector<float> logits;
  ASSIGN_OR_RETURN(Stat st, Time(
      plan_.reps, [&] { return m_.Forward(b, kv, &logits, opts_); },
      [&](int) {
        kv->Truncate(0, depth);
        return OkStatus();
      }));
  json j = StatJson(st);
  j["depth"] = depth;
  j["tokens"] = pp;
  j["tokens_per_s"] = static_cast<double>(pp) / st.median;
  const double gops = Ops(static_cast<double>(pp), 1) / st.median / 1e9;
  j["gops"] = gops;
  const double floor = FloorSeconds(static_cast<double>(pp), 1);
  PutFloor(j, floor, st.median);
  pp_json_.push_back(j);
  Row("pp" + std::to_string(pp) + at, st, static_cast<double>(pp), 1, false, gops, floor, 0, 0,
      0);
  return OkStatus();
}

Status ModelBench::RunGeneration(int depth, model::KvStorage* kv, const std::string& at) {
  const int64_t tg = plan_.tg;
  const std::vector<int32_t> ids = RandomTokens(tg);
  std::vector<float> logits;
  ASSIGN_OR_RETURN(Stat st, Time(plan_.reps, [&]() -> Status {
    for (int64_t i = 0; i < tg; ++i) {
      model::Batch b;
      b.Add(ids[i], depth + static_cast<int32_t>(i), 0, true);
      RETURN_IF_ERROR(m_.Forward(b, kv, &logits, opts_));
    }
    return OkStatus();
  }, [&](int r) {
    kv->Truncate(0, depth);
    return ProbeBefore(r);
  }));
  const double gbs = WeightsGbs(static_cast<double>(tg), st.median);
  const double paired = PairedPct(st, static_cast<double>(tg));
  // Step i reads depth + i + 1 positions; the mean over the steps.
  double kv_step = 0;
  for (int64_t i = 0; i < tg; ++i) kv_step += KvRead(depth + i + 1);
  kv_step /= static_cast<double>(tg);
  json j = StatJson(st);
  j["depth"] = depth;
  j["tokens"] = tg;
  j["tokens_per_s"] = static_cast<double>(tg) / st.median;
  j["weights_gbs"] = gbs;
  j["roofline_pct"] = 100.0 * gbs / bandwidth_;
  j["probe_gbs"] = probes_;
  j["paired_roofline_pct"] = paired;
  j["kv_bytes_per_step"] = kv_step;
  j["read_floor_pct"] = 100.0 * ReadFloorSeconds(kv_step) * static_cast<double>(tg) / st.median;
  const double gops = Ops(1, 1) * static_cast<double>(tg) / st.median / 1e9;
  j["gops"] = gops;
  const double floor = FloorSeconds(1, 1) * static_cast<double>(tg);
  PutFloor(j, floor, st.median);
  tg_json_.push_back(j);
  Row("tg" + std::to_string(tg) + at, st, static_cast<double>(tg), static_cast<double>(tg), true,
      gops, floor, 0, paired, kv_step);
  return OkStatus();
}

Status ModelBench::RunCurve(int depth, const std::string& at) {
  const std::vector<int>& batches = plan_.batches;
  const int32_t n = plan_.by_depth ? depth : static_cast<int32_t>(plan_.ctx);
  const int max_b = *std::max_element(batches.begin(), batches.end());
  ASSIGN_OR_RETURN(std::unique_ptr<model::ContiguousKvStorage> kv_owner,
                   model::ContiguousKvStorage::Create(c_, n + 1, max_b, plan_.kv_type));
  model::KvStorage* kv = kv_owner.get();
  // Prefill sequence 0 once and copy its rows to the others (same
  // attention cost as distinct contexts, without max_b prefills).
  RETURN_IF_ERROR(Prefill(kv, 0, n));
  std::vector<float> key(static_cast<size_t>(c_.k_dim()));
  for (int32_t seq = 1; seq < max_b; ++seq) {
    RETURN_IF_ERROR(kv->Reserve(seq, n));
    for (int32_t l = 0; l < c_.n_layer; ++l) {
      for (int32_t p = 0; p < n; ++p) {
        const model::KvStorage& ckv = *kv;
        if (kv->key_tile() > 0) {  // a tiled key spans its tile's slots (F16: exact)
          ckv.LoadKey(l, 0, p, c_.k_dim(), key.data());
          kv->StoreKey(l, seq, p, key.data(), c_.k_dim());
        } else {
          std::copy_n(ckv.KeyData(l, 0, p), k_bytes_, kv->KeyData(l, seq, p));
        }
        std::copy_n(ckv.ValueData(l, 0, p), v_bytes_, kv->ValueData(l, seq, p));
      }
    }
    kv->Commit(seq, n);
  }
  json curve = json::array();
  double step1 = 0;
  std::vector<float> logits;
  for (int b : batches) {
    model::Batch batch;
    const std::vector<int32_t> ids = RandomTokens(b);
    for (int i = 0; i < b; ++i) batch.Add(ids[i], n, i, true);
    // After the probe, one untimed step: a timed step then starts as the
    // engine's steps do, right after another (the model's pool awake, its
    // KV and activations in cache), not from the probe's cold caches and
    // sleeping workers (measured side by side on a Zen 5, 3 rounds: Gemma's
    // B = 1 step 6.36 ms without it, 6.23 with it, within the noise).
    auto step = [&] { return m_.Forward(batch, kv, &logits, opts_); };
    ASSIGN_OR_RETURN(Stat st, Time(plan_.reps, step, [&](int r) -> Status {
      RETURN_IF_ERROR(ProbeBefore(r));
      return step();
    }));
    if (b == batches.front()) step1 = st.median;
    const double paired = PairedPct(st, 1);
    const double gbs = WeightsGbs(1, st.median);
    const double kv_step = b * KvRead(n + 1);
    json j = StatJson(st);
    j["batch"] = b;
    j["ctx"] = n;
    j["tokens_per_s"] = b / st.median;
    j["weights_gbs"] = gbs;
    j["roofline_pct"] = 100.0 * gbs / bandwidth_;
    j["probe_gbs"] = probes_;
    j["paired_roofline_pct"] = paired;
    j["step_ratio"] = st.median / step1;
    const double gops = Ops(b, b) / st.median / 1e9;
    j["gops"] = gops;
    j["kv_bytes_read"] = kv_step;
    j["read_floor_pct"] = 100.0 * ReadFloorSeconds(kv_step) / st.median;
    const double floor = FloorSeconds(b, b);
    PutFloor(j, floor, st.median);
    curve.push_back(j);
    Row(StrFormat("decode B=%d%s", b, at.c_str()), st, b, 1, true, gops, floor,
        st.median / step1, paired, kv_step);
  }
  curves_.push_back(curve);
  return OkStatus();
}

json ModelBench::Json() const {
  json out = json::object();
  out["bandwidth_gbs"] = bandwidth_;
  out["weight_bytes_per_step"] = wbytes_;
  out["weight_macs_per_token"] = wmacs_.layers;
  out["output_macs_per_logit_row"] = wmacs_.output;
  if (peaks_.measured()) {
    json by_kind = json::object(), peak_gops = json::object();
    for (int k = 0; k < kernels::kNumPeakKinds; ++k) {
      const char* name = kernels::PeakKindName(static_cast<kernels::PeakKind>(k));
      by_kind[name] = {{"weight_macs_per_token", wmacs_.layers_by_kind[k]},
                       {"output_macs_per_logit_row", wmacs_.output_by_kind[k]}};
      peak_gops[name] = 2 * peaks_.gmacs[k];
    }
    out["macs_by_kind"] = by_kind;
    out["compute_peak_gops"] = peak_gops;
  }
  // One depth without --depth: the single objects of earlier reports.
  if (plan_.pp > 0) out["pp"] = plan_.by_depth ? pp_json_ : pp_json_[0];
  if (plan_.tg > 0) out["tg"] = plan_.by_depth ? tg_json_ : tg_json_[0];
  if (!plan_.batches.empty()) out["decode"] = plan_.by_depth ? curves_ : curves_[0];
  return out;
}

}  // namespace weft::apps
