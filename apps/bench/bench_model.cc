// `weft bench model -m MODEL [--threads N] [--reps 5] [--json FILE]`
// (also `weft bench-model ...`): llama-bench-style model throughput on the
// fast kernels, with the machine's read bandwidth measured in the same run
// (before the tests, the roofline, and again after them: their spread is
// how far a shared machine's bandwidth moved meanwhile), and a shorter probe
// right before each timed decode repetition, paired with it: "% paired" is
// each repetition's weights GB/s over its own probe (median), the roofline
// figure a machine whose bandwidth drifts within seconds needs.
//
//   pp512  prompt processing: one Forward of 512 tokens (tokens/s)
//   tg128  generation: 128 one-token Forwards from an empty context
//   B = 1..32: one batched decode step of B sequences, each with 256
//          tokens of context, as ONE Forward (the engine's decode step)
//   --depth 0,1000,...: pp512 and tg128 after that many tokens of context
//          and the curve at that context, for each depth (llama-bench's -d); each
//          decode row shows the KV bytes its step reads and the step's
//          share of its read floor ((weights + KV bytes) / bandwidth)
//
// Every figure is the median of --reps runs after one warm-up, with min-max.
// Decode figures are also shown as GB/s of weights read (each step reads
// every weight matrix once) and as % of the bandwidth roofline, and the
// batched steps as a ratio to the first batch size's step. Every test also
// shows the weight products' operations per second (2 per multiply-add of
// a weight with an activation; attention not counted): the compute-bound
// figure for prefill and batched decode. With the AVX2 kernels the run also
// measures the compute ceilings (kernels/compute_peak.h), and each test
// shows its compute floor (the weight multiply-adds of each kind over that
// kind's ceiling) and the share of the step the floor is.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/bench_json.h"
#include "apps/bench/bench_stats.h"
#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "kernels/bandwidth.h"
#include "kernels/compute_peak.h"
#include "kernels/isa.h"
#include "kernels/thread_pool.h"
#include "model/model.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using json = nlohmann::json;

// argv[0] is "model" under `weft bench`, else "bench-model".
std::string CommandLine(int argc, char** argv) {
  std::string s = std::string(argv[0]) == "model" ? "weft bench" : "weft";
  for (int i = 0; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "weft bench model: %s\n", s.ToString().c_str());
  return 1;
}

int RunBenchModel(int argc, char** argv) {
  FlagSet flags("weft bench model [-m MODEL] [--threads N] [--reps 5] [--json FILE]",
                "Model throughput: pp512, tg128 and the batched decode curve, "
                "with the read bandwidth measured in the same run.");
  ModelFlags model_flags(WEFT_BENCH_MODEL);
  ThreadFlags thread_flags("compute threads (caller included)", /*default_threads=*/2);
  KvFlags kv_flags("KV cache storage: f16 (as weft serve and llama-bench), f32 or q8_0");
  std::string json_path, isa_name;
  int64_t reps = 5, pp = 512, tg = 128, ctx = 256;
  std::string batch_list = "1,2,4,8,16,32", depth_list;
  bool row_major = false;
  model_flags.Register(&flags);
  thread_flags.Register(&flags);
  flags.Int("reps", &reps, "timed repetitions after one warm-up");
  flags.String("json", &json_path, "also write every figure to this JSON file");
  flags.String("isa", &isa_name, "force a kernel ISA: scalar, avx2, avx512, neon (default: best)");
  flags.Int("pp", &pp, "prompt tokens of the prefill test (0 = skip)");
  flags.Int("tg", &tg, "tokens of the generation test (0 = skip)");
  flags.Int("ctx", &ctx, "context tokens of each sequence in the batched decode test");
  flags.String("batches", &batch_list, "batch sizes of the decode curve (empty = skip)");
  flags.String("depth", &depth_list,
               "context depths, e.g. 0,1000,2000,4000 (llama-bench's -d): the prompt and generation "
               "tests start after that many tokens and the decode curve runs at each (replaces --ctx)");
  kv_flags.Register(&flags);
  flags.Bool("row-major", &row_major,
             "keep Q4_0/Q5_0/Q8_0/Q4_K/Q5_K/Q6_K weights in the file's layout (no x8 repack at load)");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty()) {
    std::fprintf(stderr, "weft bench model: unexpected argument '%s'\n", args[0].c_str());
    return 2;
  }
  if (thread_flags.threads < 1 || thread_flags.threads > 256 || reps < 1 || reps > 1000 || pp < 0 || tg < 0 ||
      ctx < 1 || pp > (1 << 20) || tg > (1 << 20) || ctx > (1 << 20)) {
    std::fprintf(stderr, "weft bench model: --threads, --reps, --pp, --tg or --ctx out of range\n");
    return 2;
  }
  // A comma-separated list of integers in [lo, hi].
  auto parse_list = [](const std::string& list, long lo, long hi, const char* what,
                       std::vector<int>* out) {
    for (std::string_view piece : StrSplit(list, ',')) {
      const std::string part(piece);
      if (part.empty()) continue;
      char* end = nullptr;
      const long b = std::strtol(part.c_str(), &end, 10);
      if (*end != '\0' || b < lo || b > hi) {
        std::fprintf(stderr, "weft bench model: bad %s '%s'\n", what, part.c_str());
        return false;
      }
      out->push_back(static_cast<int>(b));
    }
    return true;
  };
  std::vector<int> batches, depths;
  if (!parse_list(batch_list, 1, 4096, "batch size", &batches) ||
      !parse_list(depth_list, 0, 1 << 20, "depth", &depths)) {
    return 2;
  }
  // Without --depth: tg from an empty context, the curve at --ctx.
  const bool by_depth = !depths.empty();
  if (!by_depth) depths.push_back(0);
  if (!isa_name.empty()) {
    kernels::Isa isa;
    if (!kernels::ParseIsa(isa_name, &isa) || !kernels::IsaSupported(isa)) {
      std::fprintf(stderr, "weft bench model: ISA '%s' unknown or not supported here\n",
                   isa_name.c_str());
      return 2;
    }
    kernels::SetIsa(isa);
  }

  const StatusOr<model::KvType> kv_type = model::ParseKvType(kv_flags.type);
  if (!kv_type.ok()) {
    std::fprintf(stderr, "weft bench model: %s\n", kv_type.status().ToString().c_str());
    return 2;
  }

  model::LoadOptions load;
  load.repack_x8 = !row_major;
  auto model_or = model::Model::Load(model_flags.path, load);
  if (!model_or.ok()) {
    std::fprintf(stderr, "weft bench model: %s\n", model_or.status().ToString().c_str());
    return 2;
  }
  const model::Model& m = **model_or;
  const model::ModelConfig& c = m.config();
  model::ForwardOptions opts;
  opts.n_threads = static_cast<int>(thread_flags.threads);
  const uint64_t wbytes = WeightBytes(m.weights());
  const WeightMacs wmacs = CountWeightMacs(m.weights());
  // Weight-product operations (2 per multiply-add) of `tokens` tokens of
  // which `logit_rows` want logits.
  auto ops = [&](double tokens, double logit_rows) {
    return 2.0 * (static_cast<double>(wmacs.layers) * tokens +
                  static_cast<double>(wmacs.output) * logit_rows);
  };
  std::mt19937 rng(1234);
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& t : ids) t = static_cast<int32_t>(rng() % static_cast<uint32_t>(c.n_vocab));
    return ids;
  };

  // Bandwidth and compute ceilings first, with a pool of the same size
  // (then released).
  kernels::ThreadPoolOptions probe_pool_options;
  probe_pool_options.num_threads = static_cast<int>(thread_flags.threads);
  double bandwidth = 0;
  kernels::ComputePeaks peaks;
  {
    kernels::ThreadPool pool(probe_pool_options);
    bandwidth = kernels::MeasureReadBandwidth(&pool);
    peaks = kernels::MeasureComputePeaks(&pool);
  }
  std::fprintf(stderr, "bandwidth %.1f GB/s; model %s; weights read per step %s\n",
               bandwidth, c.Summary().c_str(), HumanBytes(static_cast<double>(wbytes)).c_str());
  // The paired probe: 256 MiB (past any last-level cache, a fraction of a
  // second to read) on a pool of its own whose workers sleep at once (no
  // spinning into the timed runs), best of 2 passes, 2 ms after the model's
  // last step (its workers spin that long at most).
  // Allocated only when a decode test runs (the buffer is first touched
  // here, a few tens of ms).
  kernels::ThreadPoolOptions paired_pool_options = probe_pool_options;
  paired_pool_options.spin_iterations = 0;
  std::optional<kernels::ThreadPool> paired_pool;
  std::optional<kernels::ReadBandwidthProbe> paired_probe;
  if (tg > 0 || !batches.empty()) {
    paired_pool.emplace(paired_pool_options);
    paired_probe.emplace(&*paired_pool, size_t{256} << 20);
  }
  std::vector<double> probes;  // the current test's, one per timed run
  auto probe_before = [&](int r) {
    if (r == 0) probes.clear();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    const double gbs = paired_probe->Measure(2);
    if (r > 0) probes.push_back(gbs);
    return OkStatus();
  };
  // GB/s of weights `steps` decode steps read in `seconds`.
  auto weights_gbs = [&](double steps, double seconds) {
    return static_cast<double>(wbytes) * steps / seconds / 1e9;
  };
  // Median over the timed runs of st of (weights GB/s of the run, `steps`
  // steps) / (its probe), in %.
  auto paired_pct = [&](const Stat& st, double steps) {
    std::vector<double> pct;
    for (size_t i = 0; i < st.samples.size(); ++i) {
      pct.push_back(100.0 * weights_gbs(steps, st.samples[i]) / probes[i]);
    }
    return Summarize(std::move(pct)).median;
  };
  // Seconds the weight products of `tokens` tokens (`logit_rows` of them
  // with logits) take at least at the measured ceilings; 0 if unmeasured.
  auto floor_s = [&](double tokens, double logit_rows) {
    if (!peaks.measured()) return 0.0;
    double s = 0;
    for (int k = 0; k < kernels::kNumPeakKinds; ++k) {
      s += (static_cast<double>(wmacs.layers_by_kind[k]) * tokens +
            static_cast<double>(wmacs.output_by_kind[k]) * logit_rows) /
           (peaks.gmacs[k] * 1e9);
    }
    return s;
  };

  json out;
  out["command"] = CommandLine(argc, argv);
  out["commit"] = WEFT_GIT_COMMIT;
  out["model"] = model_flags.path;
  out["model_summary"] = c.Summary();
  out["isa"] = std::string(kernels::IsaName(kernels::ActiveIsa()));
  out["weights_x8"] = !row_major;
  out["kv_type"] = model::KvTypeName(*kv_type);
  out["threads"] = thread_flags.threads;
  out["reps"] = reps;
  out["bandwidth_gbs"] = bandwidth;
  out["weight_bytes_per_step"] = wbytes;
  out["weight_macs_per_token"] = wmacs.layers;
  out["output_macs_per_logit_row"] = wmacs.output;
  if (peaks.measured()) {
    json by_kind = json::object(), peak_gops = json::object();
    for (int k = 0; k < kernels::kNumPeakKinds; ++k) {
      const char* name = kernels::PeakKindName(static_cast<kernels::PeakKind>(k));
      by_kind[name] = {{"weight_macs_per_token", wmacs.layers_by_kind[k]},
                       {"output_macs_per_logit_row", wmacs.output_by_kind[k]}};
      peak_gops[name] = 2 * peaks.gmacs[k];
    }
    out["macs_by_kind"] = by_kind;
    out["compute_peak_gops"] = peak_gops;
  }
  std::string table;
  // The weights-plus-KV read floor of a step reading `kv` KV bytes (s).
  auto read_floor_s = [&](double kv) {
    return (static_cast<double>(wbytes) + kv) / (bandwidth * 1e9);
  };
  // One table line; `steps` Forward calls made `tokens` tokens and `gops`
  // weight-product GOP/s; `floor`: the compute floor of all of them (s);
  // ratio > 0: the step as a multiple of step(B=1); paired: % of the
  // paired probe (decode only); kv: KV bytes a step reads (decode only).
  auto row = [&](const std::string& test, const Stat& st, double tokens, double steps,
                 bool decode, double gops, double floor, double ratio, double paired,
                 double kv) {
    // Cells after GOP/s: floor ms/step, % floor, GB/s, % roofline, % paired,
    // KV MB/step, % read floor, ratio.
    std::string cells;
    cells += floor > 0 ? StrFormat(" %.2f | %.0f%% |", 1e3 * floor / steps,
                                   100.0 * floor / st.median)
                       : std::string(" | |");
    if (decode) {
      const double gbs = weights_gbs(steps, st.median);
      cells += StrFormat(" %.1f | %.0f%% | %.0f%% | %.1f | %.0f%% |", gbs,
                         100.0 * gbs / bandwidth, paired, kv / 1e6,
                         100.0 * read_floor_s(kv) * steps / st.median);
    } else {
      cells += " | | | | |";
    }
    cells += ratio > 0 ? StrFormat(" %.2f |", ratio) : std::string(" |");
    table += StrFormat("| %s | %.2f | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %.1f |%s\n",
                       test.c_str(), 1e3 * st.median / steps, 1e3 * st.median,
                       1e3 * st.min, 1e3 * st.max, tokens / st.median,
                       tokens / st.max, tokens / st.min, gops, cells.c_str());
  };
  const int64_t k_bytes = model::KvRowBytes(*kv_type, c.k_dim());
  const int64_t v_bytes = model::KvRowBytes(*kv_type, c.v_dim());
  // KV bytes one token at position n - 1 reads (n positions of its
  // sequence), all layers: sliding-window layers read only their window.
  auto kv_read = [&](int64_t n) {
    double rows = 0;
    for (int64_t l = 0; l < c.n_layer; ++l) {
      rows += static_cast<double>(c.IsLocalLayer(l) ? std::min<int64_t>(n, c.sliding_window) : n);
    }
    return rows * static_cast<double>(k_bytes + v_bytes);
  };
  // Prefills positions [0, n) of `seq` with random tokens, in chunks.
  std::vector<float> prefill_logits;
  auto prefill = [&](model::KvCache* kv, int32_t seq, int32_t n) -> Status {
    constexpr int32_t kChunk = 512;
    for (int32_t p = 0; p < n; p += kChunk) {
      const int32_t len = std::min(kChunk, n - p);
      RETURN_IF_ERROR(m.Forward(model::Batch::ForPrompt(random_tokens(len), p, seq), kv,
                                &prefill_logits, opts));
    }
    return OkStatus();
  };

  // The compute floor of a test whose timed unit has the median `median`.
  auto put_floor = [&](json& j, double floor, double median) {
    if (floor <= 0) return;
    j["compute_floor_s"] = floor;
    j["compute_floor_pct"] = 100.0 * floor / median;
  };

  json pp_json = json::array(), tg_json = json::array(), curves = json::array();
  for (int depth : depths) {
    const std::string at = by_depth ? StrFormat(" @ d%d", depth) : std::string();
    // One context of `depth` tokens for the prompt and generation tests,
    // prefilled once (each repetition truncates back to it).
    auto ctx_kv = model::ContiguousKvCache::Create(
        c, depth + static_cast<int32_t>(std::max<int64_t>({pp, tg, 1})), 1, *kv_type);
    if (!ctx_kv.ok()) return Fail(ctx_kv.status());
    if (pp > 0 || tg > 0) {
      if (Status s = prefill(ctx_kv->get(), 0, depth); !s.ok()) return Fail(s);
    }
    if (pp > 0) {
      const model::Batch b = model::Batch::ForPrompt(random_tokens(pp), depth);
      std::vector<float> logits;
      auto st = Time(
          static_cast<int>(reps), [&] { return m.Forward(b, ctx_kv->get(), &logits, opts); },
          [&](int) {
            (*ctx_kv)->Truncate(0, depth);
            return OkStatus();
          });
      if (!st.ok()) return Fail(st.status());
      json j = StatJson(*st);
      j["depth"] = depth;
      j["tokens"] = pp;
      j["tokens_per_s"] = static_cast<double>(pp) / st->median;
      const double gops = ops(static_cast<double>(pp), 1) / st->median / 1e9;
      j["gops"] = gops;
      const double floor = floor_s(static_cast<double>(pp), 1);
      put_floor(j, floor, st->median);
      pp_json.push_back(j);
      row("pp" + std::to_string(pp) + at, *st, static_cast<double>(pp), 1, false, gops, floor, 0,
          0, 0);
    }
    if (tg > 0) {
      const std::vector<int32_t> ids = random_tokens(tg);
      std::vector<float> logits;
      auto st = Time(static_cast<int>(reps), [&]() -> Status {
        for (int64_t i = 0; i < tg; ++i) {
          model::Batch b;
          b.Add(ids[i], depth + static_cast<int32_t>(i), 0, true);
          RETURN_IF_ERROR(m.Forward(b, ctx_kv->get(), &logits, opts));
        }
        return OkStatus();
      }, [&](int r) {
        (*ctx_kv)->Truncate(0, depth);
        return probe_before(r);
      });
      if (!st.ok()) return Fail(st.status());
      const double gbs = weights_gbs(static_cast<double>(tg), st->median);
      const double paired = paired_pct(*st, static_cast<double>(tg));
      // Step i reads depth + i + 1 positions; the mean over the steps.
      double kv_step = 0;
      for (int64_t i = 0; i < tg; ++i) kv_step += kv_read(depth + i + 1);
      kv_step /= static_cast<double>(tg);
      json j = StatJson(*st);
      j["depth"] = depth;
      j["tokens"] = tg;
      j["tokens_per_s"] = static_cast<double>(tg) / st->median;
      j["weights_gbs"] = gbs;
      j["roofline_pct"] = 100.0 * gbs / bandwidth;
      j["probe_gbs"] = probes;
      j["paired_roofline_pct"] = paired;
      j["kv_bytes_per_step"] = kv_step;
      j["read_floor_pct"] = 100.0 * read_floor_s(kv_step) * static_cast<double>(tg) / st->median;
      const double gops = ops(1, 1) * static_cast<double>(tg) / st->median / 1e9;
      j["gops"] = gops;
      const double floor = floor_s(1, 1) * static_cast<double>(tg);
      put_floor(j, floor, st->median);
      tg_json.push_back(j);
      row("tg" + std::to_string(tg) + at, *st, static_cast<double>(tg), static_cast<double>(tg),
          true, gops, floor, 0, paired, kv_step);
    }
    if (batches.empty()) continue;
    const int32_t n = by_depth ? depth : static_cast<int32_t>(ctx);
    const int max_b = *std::max_element(batches.begin(), batches.end());
    auto kv_or = model::ContiguousKvCache::Create(c, n + 1, max_b, *kv_type);
    if (!kv_or.ok()) return Fail(kv_or.status());
    model::KvCache* kv = kv_or->get();
    // Prefill sequence 0 once and copy its rows to the others (same
    // attention cost as distinct contexts, without max_b prefills).
    if (Status s = prefill(kv, 0, n); !s.ok()) return Fail(s);
    for (int32_t seq = 1; seq < max_b; ++seq) {
      if (Status s = kv->Reserve(seq, n); !s.ok()) return Fail(s);
      for (int32_t l = 0; l < c.n_layer; ++l) {
        for (int32_t p = 0; p < n; ++p) {
          const model::KvCache& ckv = *kv;
          std::copy_n(ckv.KeyData(l, 0, p), k_bytes, kv->KeyData(l, seq, p));
          std::copy_n(ckv.ValueData(l, 0, p), v_bytes, kv->ValueData(l, seq, p));
        }
      }
      kv->Commit(seq, n);
    }
    json curve = json::array();
    double step1 = 0;
    std::vector<float> logits;
    for (int b : batches) {
      model::Batch batch;
      const std::vector<int32_t> ids = random_tokens(b);
      for (int i = 0; i < b; ++i) batch.Add(ids[i], n, i, true);
      // After the probe, one untimed step: a timed step then starts as the
      // engine's steps do, right after another (the model's pool awake, its
      // KV and activations in cache), not from the probe's cold caches and
      // sleeping workers (measured side by side on a Zen 5, 3 rounds: Gemma's
      // B = 1 step 6.36 ms without it, 6.23 with it, within the noise).
      auto step = [&] { return m.Forward(batch, kv, &logits, opts); };
      auto st = Time(static_cast<int>(reps), step, [&](int r) -> Status {
        RETURN_IF_ERROR(probe_before(r));
        return step();
      });
      if (!st.ok()) return Fail(st.status());
      if (b == batches.front()) step1 = st->median;
      const double paired = paired_pct(*st, 1);
      const double gbs = weights_gbs(1, st->median);
      const double kv_step = b * kv_read(n + 1);
      json j = StatJson(*st);
      j["batch"] = b;
      j["ctx"] = n;
      j["tokens_per_s"] = b / st->median;
      j["weights_gbs"] = gbs;
      j["roofline_pct"] = 100.0 * gbs / bandwidth;
      j["probe_gbs"] = probes;
      j["paired_roofline_pct"] = paired;
      j["step_ratio"] = st->median / step1;
      const double gops = ops(b, b) / st->median / 1e9;
      j["gops"] = gops;
      j["kv_bytes_read"] = kv_step;
      j["read_floor_pct"] = 100.0 * read_floor_s(kv_step) / st->median;
      const double floor = floor_s(b, b);
      put_floor(j, floor, st->median);
      curve.push_back(j);
      row(StrFormat("decode B=%d%s", b, at.c_str()), *st, b, 1, true, gops, floor,
          st->median / step1, paired, kv_step);
    }
    curves.push_back(curve);
  }
  // One depth without --depth: the single objects of earlier reports.
  if (pp > 0) out["pp"] = by_depth ? pp_json : pp_json[0];
  if (tg > 0) out["tg"] = by_depth ? tg_json : tg_json[0];
  if (!batches.empty()) out["decode"] = by_depth ? curves : curves[0];

  // The probe again after the tests: on a shared machine the two readings'
  // spread shows how far the bandwidth moved during the run (the roofline
  // columns use the first).
  double bandwidth_after = 0;
  {
    kernels::ThreadPool pool(probe_pool_options);
    bandwidth_after = kernels::MeasureReadBandwidth(&pool);
  }
  out["bandwidth_after_gbs"] = bandwidth_after;

  std::printf("## %s\n\n", CommandLine(argc, argv).c_str());
  std::printf("- commit: %s\n- model: %s (%s)\n- weights read per step: %s\n",
              WEFT_GIT_COMMIT, model_flags.path.c_str(), c.Summary().c_str(),
              HumanBytes(static_cast<double>(wbytes)).c_str());
  std::printf("- isa: %s, weights: %s, kv: %s, threads: %lld, reps: %lld (median, min-max after 1 warm-up)\n",
              std::string(kernels::IsaName(kernels::ActiveIsa())).c_str(),
              row_major ? "row-major" : "x8 where Q4_0/Q5_0/Q8_0/Q4_K/Q5_K/Q6_K",
              model::KvTypeName(*kv_type),
              static_cast<long long>(thread_flags.threads), static_cast<long long>(reps));
  std::printf(
      "- read bandwidth (same run): %.1f GB/s before the tests (the roofline), %.1f GB/s after; "
      "%% paired: each timed decode run's weights GB/s over a 256 MiB probe read right before "
      "it (median)\n",
      bandwidth, bandwidth_after);
  if (peaks.measured()) {
    // % of a token's (and its logit row's) weight multiply-adds of one kind.
    auto share = [&](int k) {
      return 100.0 * static_cast<double>(wmacs.layers_by_kind[k] + wmacs.output_by_kind[k]) /
             static_cast<double>(wmacs.layers + wmacs.output);
    };
    std::printf(
        "- compute ceilings (same run; the bare instruction sequences, %.0f%% / %.0f%% / %.0f%% of "
        "this model's weight multiply-adds per token): int8 signed (Q8_0) %.0f GOP/s, int8 "
        "unsigned codes (Q4_0/Q5_0/K-quants) %.0f GOP/s, f32 FMA (F32/F16/BF16) %.0f GOP/s; "
        "floor = the weight products at those ceilings\n",
        share(0), share(1), share(2), 2 * peaks.gmacs[0], 2 * peaks.gmacs[1],
        2 * peaks.gmacs[2]);
  } else {
    std::printf("- compute ceilings: not measured with the %s kernels\n",
                std::string(kernels::IsaName(kernels::ActiveIsa())).c_str());
  }
  std::printf(
      "\n| test | ms/step | total ms (min-max) | tokens/s (min-max) | GOP/s | floor ms/step | "
      "%% floor | weights GB/s | %% roofline | %% paired | KV MB/step | %% read floor | x step(B=%d) |\n",
      batches.empty() ? 1 : batches.front());
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s", table.c_str());
  if (!json_path.empty() && !WriteBenchJson(json_path, out, "model")) return 1;
  return 0;
}

}  // namespace

WEFT_COMMAND("bench-model", "model throughput: pp512, tg128, batched decode", RunBenchModel);
WEFT_BENCH_VERB("model", "model throughput: pp512, tg128, batched decode", RunBenchModel);

}  // namespace weft::apps
