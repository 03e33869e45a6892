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
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/bench_json.h"
#include "apps/bench/bench_model_run.h"
#include "apps/bench/bench_stats.h"
#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "kernels/isa.h"
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

// The flags of `weft bench model`.
struct ModelBenchOptions {
  // -m: the GGUF file (Gemma 3 270M by default).
  ModelFlags model{WEFT_BENCH_MODEL};
  // -t: compute threads, the caller included.
  ThreadFlags threads{"compute threads (caller included)", /*default_threads=*/2};
  // --kv-type: the KV cache's storage.
  KvFlags kv{"KV cache storage: f16 (as weft serve and llama-bench), f32 or q8_0"};
  // --reps, --json.
  MeasureFlags measure;
  // Force a kernel ISA; empty = the best.
  std::string isa_name;
  // Prompt tokens of the prefill test and tokens of the generation test;
  // 0 = skip.
  int64_t pp = 512;
  int64_t tg = 128;
  // Context tokens of each sequence in the batched decode test.
  int64_t ctx = 256;
  // Batch sizes of the decode curve; empty = skip.
  std::string batch_list = "1,2,4,8,16,32";
  // Context depths, e.g. 0,1000,2000; empty = none (--ctx for the curve).
  std::string depth_list;
  // Keep the weights in the file's layout (no x8 repack at load).
  bool row_major = false;
};

void RegisterModelBenchFlags(ModelBenchOptions* o, FlagSet* flags) {
  o->model.Register(flags);
  o->threads.Register(flags);
  o->measure.Register(flags);
  flags->String("isa", &o->isa_name,
                "force a kernel ISA: scalar, avx2, avx512, amx, neon (default: best)");
  flags->Int("pp", &o->pp, "prompt tokens of the prefill test (0 = skip)");
  flags->Int("tg", &o->tg, "tokens of the generation test (0 = skip)");
  flags->Int("ctx", &o->ctx, "context tokens of each sequence in the batched decode test");
  flags->String("batches", &o->batch_list, "batch sizes of the decode curve (empty = skip)");
  flags->String("depth", &o->depth_list,
                "context depths, e.g. 0,1000,2000,4000 (llama-bench's -d): the prompt and "
                "generation tests start after that many tokens and the decode curve runs at "
                "each (replaces --ctx)");
  o->kv.Register(flags);
  flags->Bool("row-major", &o->row_major,
              "keep quantized weights in the file's layout (no x8 repack at load)");
}

// A comma-separated list of integers in [lo, hi]; false after printing
// the bad entry.
bool ParseIntList(const std::string& list, long lo, long hi, const char* what,
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
}

// Parses and checks the flags into *o and *plan, and selects --isa;
// false with *rc the exit code when the command is done.
bool ParseModelBenchFlags(int argc, char** argv, ModelBenchOptions* o, ModelBenchPlan* plan,
                          int* rc) {
  FlagSet flags("weft bench model [-m MODEL] [--threads N] [--reps 5] [--json FILE]",
                "Model throughput: pp512, tg128 and the batched decode curve, "
                "with the read bandwidth measured in the same run.");
  RegisterModelBenchFlags(o, &flags);
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  *rc = 2;
  if (!args.empty()) {
    std::fprintf(stderr, "weft bench model: unexpected argument '%s'\n", args[0].c_str());
    return false;
  }
  const int64_t threads = o->threads.threads;
  const int64_t reps = o->measure.reps;
  if (threads < 1 || threads > 256 || reps < 1 || reps > 1000 || o->pp < 0 || o->tg < 0 ||
      o->ctx < 1 || o->pp > (1 << 20) || o->tg > (1 << 20) || o->ctx > (1 << 20)) {
    std::fprintf(stderr, "weft bench model: --threads, --reps, --pp, --tg or --ctx out of range\n");
    return false;
  }
  std::vector<int> depths;
  if (!ParseIntList(o->batch_list, 1, 4096, "batch size", &plan->batches) ||
      !ParseIntList(o->depth_list, 0, 1 << 20, "depth", &depths)) {
    return false;
  }
  // Without --depth: tg from an empty context, the curve at --ctx.
  plan->by_depth = !depths.empty();
  if (plan->by_depth) plan->depths = depths;
  if (!o->isa_name.empty()) {
    kernels::Isa isa;
    if (!kernels::ParseIsa(o->isa_name, &isa) || !kernels::IsaSupported(isa)) {
      std::fprintf(stderr, "weft bench model: ISA '%s' unknown or not supported here\n",
                   o->isa_name.c_str());
      return false;
    }
    kernels::SetIsa(isa);
  }
  const StatusOr<model::KvType> kv_type = model::ParseKvType(o->kv.type);
  if (!kv_type.ok()) {
    std::fprintf(stderr, "weft bench model: %s\n", kv_type.status().ToString().c_str());
    return false;
  }
  plan->kv_type = *kv_type;
  plan->threads = static_cast<int>(threads);
  plan->reps = static_cast<int>(o->measure.reps);
  plan->pp = o->pp;
  plan->tg = o->tg;
  plan->ctx = o->ctx;
  return true;
}

// The report's header lines: the run's setup, bandwidth and ceilings.
void PrintModelBenchHeader(const std::string& cmdline, const ModelBenchOptions& o,
                           const ModelBenchPlan& plan, const model::Model& m,
                           const ModelBench& bench, double bandwidth_after) {
  const WeightMacs& wmacs = bench.weight_macs();
  const kernels::ComputePeaks& peaks = bench.peaks();
  const std::string isa(kernels::IsaName(kernels::ActiveIsa()));
  std::printf("## %s\n\n", cmdline.c_str());
  std::printf("- commit: %s\n- model: %s (%s)\n- weights read per step: %s\n",
              WEFT_GIT_COMMIT, o.model.path.c_str(), m.config().Summary().c_str(),
              HumanBytes(static_cast<double>(bench.weight_bytes())).c_str());
  std::printf("- isa: %s, weights: %s, kv: %s, threads: %lld, reps: %lld (median, min-max after "
              "1 warm-up)\n",
              isa.c_str(), o.row_major ? "row-major" : "x8 (quantized formats)",
              model::KvTypeName(plan.kv_type), static_cast<long long>(o.threads.threads),
              static_cast<long long>(o.measure.reps));
  std::printf(
      "- read bandwidth (same run): %.1f GB/s before the tests (the roofline), %.1f GB/s after; "
      "%% paired: each timed decode run's weights GB/s over a 256 MiB probe read right before "
      "it (median)\n",
      bench.bandwidth(), bandwidth_after);
  if (!peaks.measured()) {
    std::printf("- compute ceilings: not measured with the %s kernels\n", isa.c_str());
    return;
  }
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
      share(0), share(1), share(2), 2 * peaks.gmacs[0], 2 * peaks.gmacs[1], 2 * peaks.gmacs[2]);
}

int RunBenchModel(int argc, char** argv) {
  ModelBenchOptions o;
  ModelBenchPlan plan;
  if (int rc; !ParseModelBenchFlags(argc, argv, &o, &plan, &rc)) return rc;
  model::LoadOptions load;
  load.repack_x8 = !o.row_major;
  auto model_or = model::Model::Load(o.model.path, load);
  if (!model_or.ok()) {
    std::fprintf(stderr, "weft bench model: %s\n", model_or.status().ToString().c_str());
    return 2;
  }
  const model::Model& m = **model_or;

  // Bandwidth and compute ceilings first, then the tests at every depth,
  // then the bandwidth again: on a shared machine the two readings' spread
  // shows how far it moved during the run (the roofline columns use the
  // first).
  ModelBench bench(m, plan);
  bench.MeasureCeilings();
  for (int depth : plan.depths) {
    if (Status s = bench.RunDepth(depth); !s.ok()) return Fail(s);
  }
  const double bandwidth_after = bench.MeasureBandwidthAfter();

  json out = bench.Json();
  out["command"] = CommandLine(argc, argv);
  out["commit"] = WEFT_GIT_COMMIT;
  out["model"] = o.model.path;
  out["model_summary"] = m.config().Summary();
  out["isa"] = std::string(kernels::IsaName(kernels::ActiveIsa()));
  out["weights_x8"] = !o.row_major;
  out["kv_type"] = model::KvTypeName(plan.kv_type);
  out["threads"] = o.threads.threads;
  out["reps"] = o.measure.reps;
  out["bandwidth_after_gbs"] = bandwidth_after;

  PrintModelBenchHeader(CommandLine(argc, argv), o, plan, m, bench, bandwidth_after);
  std::printf(
      "\n| test | ms/step | total ms (min-max) | tokens/s (min-max) | GOP/s | floor ms/step | "
      "%% floor | weights GB/s | %% roofline | %% paired | KV MB/step | %% read floor | "
      "x step(B=%d) |\n",
      plan.batches.empty() ? 1 : plan.batches.front());
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n%s", bench.table().c_str());
  if (!o.measure.json_path.empty() && !WriteBenchJson(o.measure.json_path, out, "model")) return 1;
  return 0;
}

}  // namespace

WEFT_COMMAND("bench-model", "model throughput: pp512, tg128, batched decode", RunBenchModel);
WEFT_BENCH_VERB("model", "model throughput: pp512, tg128, batched decode", RunBenchModel);

}  // namespace weft::apps
