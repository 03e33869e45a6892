// `weft bench engine -m MODEL ...`: offline, in-process benchmark of the
// engine (scheduler + ModelExecutor) without HTTP. N requests of random
// token ids (seeded) with fixed prompt/output lengths arrive closed-loop at
// concurrency C or open-loop as a Poisson process at rate R; reports
// throughput (output and total tokens/s) and TTFT / ITL / E2E percentiles.
// Comma-separated lists for --concurrency, --rate, --prefill-chunk,
// --max-batched-tokens and --max-seqs run every combination side by side.
//
// --workload S1|S2 runs the serving workloads of docs/benchmarks (S1: the
// closed-loop ladder, prompt 256 / output 128 at c = 1,4,8,16 with 4*c
// requests each (--s1-requests-per-client); S2: 8 streams decoding (prompt 64,
// output 512) while a 2048-token prompt arrives every 10 s, 3 times) for every
// scheduler configuration of the lists plus an "unchunked" one (prefill_chunk
// 0, budget max(2048, longest prompt + max_seqs)), interleaved, and prints one
// markdown table with a column per configuration. --trace FILE writes the
// engine trace (docs/trace.md) of every measured run into FILE.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/bench_engine_report.h"
#include "apps/bench/bench_engine_run.h"
#include "apps/build_info.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "engine/engine.h"
#include "engine/model_executor.h"
#include "kv/kv_sizing.h"
#include "model/model.h"
#include "util/strings.h"

namespace weft::apps::bench_engine {
namespace {

// "1,4,8" -> {1, 4, 8}. False on a malformed list.
template <typename T>
bool ParseList(const std::string& s, std::vector<T>* out) {
  out->clear();
  for (std::string_view sv : StrSplit(s, ',')) {
    const std::string part(sv);
    if (part.empty()) return false;
    char* end = nullptr;
    const double v = std::strtod(part.c_str(), &end);
    if (end == nullptr || *end != '\0' || !(v >= 0) || v > 1e9) return false;
    out->push_back(static_cast<T>(v));
  }
  return !out->empty();
}

// The flags of `weft bench engine`.
struct EngineBenchOptions {
  // -m: the GGUF file (Gemma 3 270M by default).
  ModelFlags model{WEFT_BENCH_MODEL};
  // -t: compute threads; 0 = all cores.
  ThreadFlags threads;
  // custom (the flags below), S1 (ladder) or S2 (stall test).
  std::string workload = "custom";
  // Requests per configuration; num_requests_set: given on the command line
  // (S1 otherwise runs s1_per_client * c).
  int64_t num_requests = 16;
  bool num_requests_set = false;
  int64_t s1_per_client = 4;
  // Prompt and output tokens per request (S1 and S2 change the defaults).
  int64_t prompt_len = 256;
  int64_t output_len = 128;
  // Comma-separated sweeps: concurrency, Poisson rates (0 = closed loop),
  // and the scheduler's prefill chunk, token budget and sequence cap.
  std::string concurrency = "1";
  std::string rates = "0";
  std::string chunks = std::to_string(engine::SchedulerConfig().prefill_chunk);
  std::string mbts = std::to_string(engine::SchedulerConfig().max_batched_tokens);
  std::string max_seqs = std::to_string(engine::SchedulerConfig().max_seqs);
  // ITL targets (ms) and ratios: each adds the first configuration sized to
  // it, with this floor on a timed pass's first prompt chunk.
  std::string targets, ratios;
  int64_t min_prefill = engine::SchedulerConfig().min_prefill_tokens;
  // S1/S2: add a column with chunking disabled.
  bool unchunked = true;
  // S2: decoding streams and the long requests among them.
  int64_t s2_streams = 8;
  int64_t s2_long_prompt = 2048;
  int64_t s2_long_output = 16;
  int64_t s2_long_count = 3;
  double s2_interval = 10.0;
  // KV cache size in GiB.
  double kv_gib = 1.0;
  // Seed of the random prompts and arrivals.
  int64_t seed = 1;
  // Warm-up requests before each configuration.
  int64_t warmup = 1;
  // Result JSON and engine trace files; empty = none.
  std::string json_path;
  std::string trace_path;
};

void RegisterEngineBenchFlags(EngineBenchOptions* o, FlagSet* flags) {
  o->model.Register(flags);
  flags->String("workload", &o->workload,
                "custom (the flags below), S1 (ladder) or S2 (stall test)");
  flags->Int("num-requests", &o->num_requests,
             "requests per configuration (S1: default --s1-requests-per-client * c)", 'n');
  flags->Int("s1-requests-per-client", &o->s1_per_client,
             "S1: requests per unit of concurrency (n = this * c)");
  flags->Int("prompt-len", &o->prompt_len,
             "prompt tokens per request (S1 default 256, S2 streams 64)");
  flags->Int("output-len", &o->output_len,
             "output tokens per request, no EOS stop (S1 128, S2 streams 512)");
  flags->String("concurrency", &o->concurrency,
                "closed loop: requests in flight, e.g. 1,4 (with --rate: a cap, 0 = none; S1 "
                "default 1,4,8,16)");
  flags->String("rate", &o->rates,
                "open loop: Poisson arrivals per second, e.g. 0.5,1; 0 = closed loop");
  flags->String("prefill-chunk", &o->chunks, "prompt tokens per sequence per pass; 0 = none");
  flags->String("max-batched-tokens", &o->mbts, "token budget of a pass");
  flags->String("max-seqs", &o->max_seqs, "running sequences at most");
  flags->String("target-itl-ms", &o->targets,
                "add the first configuration sized to each of these ITL targets (ms), e.g. 60,90");
  flags->String("target-itl-ratio", &o->ratios,
                "add the first configuration with passes sized to each of these multiples "
                "of their decodes' own time, e.g. 1.5,2");
  flags->Int("min-prefill-tokens", &o->min_prefill,
             "timed configurations: prompt tokens a pass with decodes takes at least");
  flags->Bool("unchunked", &o->unchunked,
              "S1/S2: add a column with chunking disabled (prefill_chunk 0, budget max(2048, "
              "longest prompt + max_seqs))");
  flags->Int("s2-streams", &o->s2_streams, "S2: decoding streams");
  flags->Int("s2-long-prompt", &o->s2_long_prompt, "S2: long prompt tokens");
  flags->Int("s2-long-output", &o->s2_long_output, "S2: long requests' output tokens");
  flags->Int("s2-long-count", &o->s2_long_count, "S2: long requests per run");
  flags->Double("s2-interval", &o->s2_interval, "S2: seconds between long arrivals (first at 1x)");
  flags->Double("kv-gib", &o->kv_gib, "KV cache size in GiB (float32 K/V)");
  o->threads.Register(flags);
  flags->Int("seed", &o->seed, "seed of the random prompts and arrivals");
  flags->Int("warmup", &o->warmup, "warm-up requests before each configuration");
  flags->String("json", &o->json_path, "write the results as JSON to FILE");
  flags->String("trace", &o->trace_path,
                "write the engine trace of every measured run to FILE (JSON lines, "
                "docs/trace.md)");
}

// Checks the values' ranges: an empty string, or the message.
std::string CheckEngineBenchOptions(const EngineBenchOptions& o) {
  auto in = [](int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; };
  if (!in(o.num_requests, 1, 100000)) return "--num-requests must be in [1, 100000]";
  if (!in(o.s1_per_client, 1, 10000)) return "--s1-requests-per-client must be in [1, 10000]";
  if (!in(o.prompt_len, 1, 1000000)) return "--prompt-len must be in [1, 1000000]";
  if (!in(o.output_len, 1, 1000000)) return "--output-len must be in [1, 1000000]";
  if (!in(o.threads.threads, 0, 1024)) return "--threads must be in [0, 1024]";
  if (!in(o.warmup, 0, 1000)) return "--warmup must be in [0, 1000]";
  if (!(o.kv_gib > 0) || o.kv_gib > 4096) return "--kv-gib must be in (0, 4096]";
  if (!in(o.s2_streams, 1, 4096)) return "--s2-streams must be in [1, 4096]";
  if (!in(o.s2_long_prompt, 1, 1000000)) return "--s2-long-prompt must be in [1, 1000000]";
  if (!in(o.s2_long_output, 1, 1000000)) return "--s2-long-output must be in [1, 1000000]";
  if (!in(o.s2_long_count, 1, 1000)) return "--s2-long-count must be in [1, 1000]";
  if (!(o.s2_interval >= 0) || o.s2_interval > 3600) return "--s2-interval must be in [0, 3600]";
  return "";
}

// The parsed lists and the runs they make.
struct EngineBenchSweep {
  bool s1 = false;
  bool s2 = false;
  std::vector<int64_t> cs, ks, ms, ss;  // concurrency, chunk, budget, seqs
  std::vector<double> rs;               // rates
  std::vector<double> ts;               // ITL targets (ms)
  std::vector<double> rts;              // ITL target ratios
  // Scheduler configurations: every (budget, max_seqs, chunk) combination
  // (S1/S2: plus the unchunked one).
  std::vector<BenchPoint> configs;
  // custom: every (rate, concurrency) of every configuration.
  std::vector<BenchPoint> points;
};

// Parses the lists into the sweep: an empty string, or the message.
std::string BuildSweep(const EngineBenchOptions& o, EngineBenchSweep* w) {
  if (!ParseList(o.concurrency, &w->cs)) return "bad --concurrency list";
  if (!ParseList(o.rates, &w->rs)) return "bad --rate list";
  if (!ParseList(o.chunks, &w->ks)) return "bad --prefill-chunk list";
  if (!ParseList(o.mbts, &w->ms)) return "bad --max-batched-tokens list";
  if (!ParseList(o.max_seqs, &w->ss)) return "bad --max-seqs list";
  if (!o.targets.empty() && !ParseList(o.targets, &w->ts)) return "bad --target-itl-ms list";
  if (!o.ratios.empty() && !ParseList(o.ratios, &w->rts)) return "bad --target-itl-ratio list";
  for (int64_t m : w->ms) {
    for (int64_t s : w->ss) {
      engine::SchedulerConfig check;
      check.max_batched_tokens = static_cast<int>(m);
      check.max_seqs = static_cast<int>(s);
      if (Status st = check.Validate(); !st.ok()) return st.message();
    }
  }
  for (int64_t m : w->ms) {
    for (int64_t s : w->ss) {
      for (int64_t k : w->ks) {
        BenchPoint p;
        p.prefill_chunk = k;
        p.max_batched_tokens = m;
        p.max_seqs = s;
        p.label = w->ss.size() > 1 ? StrFormat("budget %lld chunk %lld seqs %lld", (long long)m,
                                               (long long)k, (long long)s)
                                   : StrFormat("budget %lld chunk %lld", (long long)m,
                                               (long long)k);
        w->configs.push_back(p);
      }
    }
  }
  std::string e = AddTimedConfigs(w->ts, w->rts, o.min_prefill, &w->configs);
  if (!e.empty()) return e;
  if (!w->s1 && !w->s2) {
    for (double r : w->rs) {
      for (int64_t c : w->cs) {
        if (r == 0 && c < 1) return "closed loop needs --concurrency >= 1";
        for (BenchPoint p : w->configs) {
          p.rate = r;
          p.concurrency = c;
          p.label.clear();
          w->points.push_back(p);
        }
      }
    }
    return "";
  }
  for (int64_t c : w->cs) {
    if (c < 1) return "S1 needs --concurrency >= 1";
  }
  const int64_t longest = w->s2 ? std::max(o.prompt_len, o.s2_long_prompt) : o.prompt_len;
  if (o.unchunked) {
    const int64_t seqs = *std::max_element(w->ss.begin(), w->ss.end());
    BenchPoint p;
    p.prefill_chunk = 0;
    p.max_seqs = seqs;
    p.max_batched_tokens = std::max<int64_t>(2048, longest + seqs);
    p.label = StrFormat("unchunked (budget %lld)", (long long)p.max_batched_tokens);
    w->configs.push_back(p);
  }
  return "";
}

int Usage(const std::string& m) {
  std::fprintf(stderr, "weft bench engine: %s\n", m.c_str());
  return 2;
}

// Parses the flags, applies S1/S2's defaults and builds the sweep; false
// with *rc the exit code when the command is done.
bool ParseEngineBenchFlags(int argc, char** argv, EngineBenchOptions* o, EngineBenchSweep* w,
                           int* rc) {
  FlagSet flags(
      "weft bench engine [-m MODEL] [--workload S1|S2] [--num-requests N] "
      "[--prompt-len P] [--output-len O] [--concurrency C[,C...]] "
      "[--rate R[,R...]] [--prefill-chunk K[,K...]] "
      "[--max-batched-tokens B[,B...]] [--json FILE] [--trace FILE]",
      "Offline in-process engine benchmark: random prompts through the "
      "scheduler and the model executor (no HTTP). Lists sweep every "
      "combination. --workload S1|S2 runs a serving workload for every "
      "scheduler configuration plus an unchunked one, side by side.");
  RegisterEngineBenchFlags(o, &flags);
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  *rc = 2;
  auto fail = [](const std::string& message) {
    Usage(message);
    return false;
  };
  if (!args.empty()) return fail("unexpected argument '" + args[0] + "'");
  w->s1 = o->workload == "S1" || o->workload == "s1";
  w->s2 = o->workload == "S2" || o->workload == "s2";
  if (!w->s1 && !w->s2 && o->workload != "custom") {
    return fail("--workload must be custom, S1 or S2");
  }
  if (w->s1) {
    if (!flags.WasSet("prompt-len")) o->prompt_len = 256;
    if (!flags.WasSet("output-len")) o->output_len = 128;
    if (!flags.WasSet("concurrency")) o->concurrency = "1,4,8,16";
  }
  if (w->s2) {
    if (!flags.WasSet("prompt-len")) o->prompt_len = 64;
    if (!flags.WasSet("output-len")) o->output_len = 512;
  }
  o->num_requests_set = flags.WasSet("num-requests");
  std::string error = CheckEngineBenchOptions(*o);
  if (error.empty()) error = BuildSweep(*o, w);
  return error.empty() || fail(error);
}

// Runs the configurations on one model and keeps every result.
class EngineBenchRunner {
 public:
  // REQUIRES: `model` and `o` outlive the runner.
  EngineBenchRunner(const model::Model& model, const EngineBenchOptions& o, int64_t kv_blocks)
      : model_(model),
        o_(o),
        kv_blocks_(kv_blocks),
        warm_(MakeWorkload(model.config(), static_cast<int>(o.warmup), 16, 4,
                           static_cast<uint64_t>(o.seed) + 99)) {}

  // Warms up, runs one point, traces it; false after an engine error.
  bool Run(const Workload& w, const BenchPoint& p) {
    const int threads = static_cast<int>(o_.threads.threads);
    if (o_.warmup > 0) {
      BenchPoint wp = p;
      wp.rate = 0;
      wp.concurrency = 1;
      (void)RunPoint(model_, warm_, wp, kv_blocks_, threads, static_cast<uint64_t>(o_.seed),
                     engine::EngineOptions());
    }
    engine::EngineOptions eo;
    eo.trace_path = o_.trace_path;
    eo.trace_append = traced_runs_++ > 0;
    StatusOr<BenchResult> r =
        RunPoint(model_, w, p, kv_blocks_, threads, static_cast<uint64_t>(o_.seed), eo);
    if (!r.ok()) {
      std::fprintf(stderr, "weft bench engine: %s\n", r.status().ToString().c_str());
      return false;
    }
    results_.push_back(std::move(*r));
    return true;
  }

  // A workload of n requests of the options' lengths.
  Workload Make(int64_t n, int64_t prompt_len, int64_t output_len, uint64_t seed) const {
    return MakeWorkload(model_.config(), static_cast<int>(n), static_cast<int>(prompt_len),
                        static_cast<int>(output_len), seed);
  }

  const std::vector<BenchResult>& results() const { return results_; }
  std::vector<const BenchResult*> ResultsFrom(size_t first) const {
    std::vector<const BenchResult*> row;
    for (size_t i = first; i < results_.size(); ++i) row.push_back(&results_[i]);
    return row;
  }

 private:
  const model::Model& model_;
  const EngineBenchOptions& o_;
  const int64_t kv_blocks_;
  const Workload warm_;
  int traced_runs_ = 0;
  std::vector<BenchResult> results_;
};

std::vector<std::string> Labels(const std::vector<BenchPoint>& configs) {
  std::vector<std::string> labels;
  for (const BenchPoint& p : configs) labels.push_back(p.label);
  return labels;
}

// custom: one row per point of the sweep.
bool RunCustom(const EngineBenchOptions& o, const EngineBenchSweep& w, EngineBenchRunner* run) {
  std::printf("%lld requests x (prompt %lld, output %lld)\n", (long long)o.num_requests,
              (long long)o.prompt_len, (long long)o.output_len);
  const Workload work =
      run->Make(o.num_requests, o.prompt_len, o.output_len, static_cast<uint64_t>(o.seed));
  for (const BenchPoint& p : w.points) {
    if (!run->Run(work, p)) return false;
    PrintRow(run->results().back());
  }
  return true;
}

// S1: the closed-loop ladder, every configuration at each concurrency.
bool RunS1(const EngineBenchOptions& o, const EngineBenchSweep& w, EngineBenchRunner* run) {
  std::printf("\nS1: prompt %lld, output %lld, closed loop\n\n", (long long)o.prompt_len,
              (long long)o.output_len);
  Table table(Labels(w.configs));
  for (int64_t c : w.cs) {
    const int64_t n = o.num_requests_set ? o.num_requests : o.s1_per_client * c;
    const Workload work = run->Make(n, o.prompt_len, o.output_len, static_cast<uint64_t>(o.seed));
    const size_t first = run->results().size();
    for (BenchPoint p : w.configs) {  // interleaved: A, B for each c
      p.concurrency = c;
      if (!run->Run(work, p)) return false;
      std::fprintf(stderr, "  c=%lld %s: %.1f s\n", (long long)c, p.label.c_str(),
                   run->results().back().duration_s);
    }
    AddS1Rows(c, run->ResultsFrom(first), &table);
  }
  table.Print();
  return true;
}

// S2: streams decoding while long prompts arrive, every configuration.
bool RunS2(const EngineBenchOptions& o, const EngineBenchSweep& w, EngineBenchRunner* run) {
  std::printf(
      "\nS2: %lld streams (prompt %lld, output %lld) from t=0; %lld "
      "requests of %lld prompt tokens (output %lld) at %.3g s intervals\n\n",
      (long long)o.s2_streams, (long long)o.prompt_len, (long long)o.output_len,
      (long long)o.s2_long_count, (long long)o.s2_long_prompt, (long long)o.s2_long_output,
      o.s2_interval);
  const uint64_t seed = static_cast<uint64_t>(o.seed);
  Workload work = run->Make(o.s2_streams, o.prompt_len, o.output_len, seed);
  const Workload longs = run->Make(o.s2_long_count, o.s2_long_prompt, o.s2_long_output, seed + 7);
  work.output_lens.assign(work.prompts.size(), static_cast<int>(o.output_len));
  work.arrival_s.assign(work.prompts.size(), 0.0);
  work.is_long.assign(work.prompts.size(), false);
  for (size_t k = 0; k < longs.prompts.size(); ++k) {
    work.prompts.push_back(longs.prompts[k]);
    work.output_lens.push_back(static_cast<int>(o.s2_long_output));
    work.arrival_s.push_back(o.s2_interval * static_cast<double>(k + 1));
    work.is_long.push_back(true);
  }
  for (const BenchPoint& p : w.configs) {
    if (!run->Run(work, p)) return false;
    std::fprintf(stderr, "  %s: %.1f s\n", p.label.c_str(), run->results().back().duration_s);
  }
  const std::vector<const BenchResult*> row = run->ResultsFrom(0);
  Table table(Labels(w.configs));
  AddS2Rows(row, &table);
  AddEngineRows(row, &table);
  table.Print();
  for (const BenchResult& r : run->results()) {
    if (r.num_prefill_gaps == 0) {
      std::fprintf(stderr,
                   "weft bench engine: %s: no stream token arrived during "
                   "a long prefill (streams too short for the interval?)\n",
                   r.point.label.c_str());
    }
  }
  return true;
}

// Writes --json; false after printing why it could not.
bool WriteEngineBenchJson(const EngineBenchOptions& o, const EngineBenchSweep& w,
                          const std::string& cmdline, int64_t kv_blocks,
                          const std::vector<BenchResult>& results) {
  FILE* f = std::fopen(o.json_path.c_str(), "w");
  if (f == nullptr) {
    std::fprintf(stderr, "weft bench engine: cannot write %s\n", o.json_path.c_str());
    return false;
  }
  std::fprintf(
      f,
      "{\n  \"bench\": \"engine\",\n  \"workload\": \"%s\",\n"
      "  \"command\": \"%s\",\n  \"model\": \"%s\",\n"
      "  \"num_requests\": %lld, \"prompt_len\": %lld, "
      "\"output_len\": %lld, \"kv_blocks\": %lld, \"threads\": %lld,\n"
      "  \"runs\": [\n",
      w.s1 ? "S1" : w.s2 ? "S2" : "custom", CEscape(cmdline, 4096).c_str(),
      CEscape(o.model.path, 4096).c_str(), (long long)o.num_requests, (long long)o.prompt_len,
      (long long)o.output_len, (long long)kv_blocks, (long long)o.threads.threads);
  for (size_t i = 0; i < results.size(); ++i) {
    std::fprintf(f, "%s%s\n", ResultJson(results[i]).c_str(),
                 i + 1 < results.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  if (std::fclose(f) != 0) {
    std::fprintf(stderr, "weft bench engine: cannot write %s\n", o.json_path.c_str());
    return false;
  }
  return true;
}

int RunBenchEngine(int argc, char** argv) {
  EngineBenchOptions o;
  EngineBenchSweep w;
  if (int rc; !ParseEngineBenchFlags(argc, argv, &o, &w, &rc)) return rc;
  auto model_or = model::Model::Load(o.model.path);
  if (!model_or.ok()) {
    std::fprintf(stderr, "weft bench engine: %s\n", model_or.status().ToString().c_str());
    return 2;
  }
  const model::Model& model = **model_or;
  auto layout = model::KvLayoutOf(model.config(), model::KvType::kF32);
  if (!layout.ok()) {
    std::fprintf(stderr, "weft bench engine: %s\n", layout.status().ToString().c_str());
    return 2;
  }
  const int64_t kv_blocks =
      kv::KvBlocksForBytes(*layout, 16, static_cast<uint64_t>(o.kv_gib * (1ull << 30)));
  const int64_t one_len = std::max(o.prompt_len + o.output_len,
                                   w.s2 ? o.s2_long_prompt + o.s2_long_output : int64_t{0});
  if (kv_blocks < (one_len + 15) / 16 + 1) {
    return Usage(StrFormat("--kv-gib %.3g holds %lld blocks of 16 tokens; one request needs %lld",
                           o.kv_gib, (long long)kv_blocks,
                           (long long)((one_len + 15) / 16 + 1)));
  }
  std::string cmdline = "weft bench engine";
  for (int i = 1; i < argc; ++i) cmdline += std::string(" ") + argv[i];
  std::printf("## %s\n\nmodel %s (%s), KV %lld blocks x 16, threads %lld\n", cmdline.c_str(),
              o.model.path.c_str(), model.config().Summary().c_str(), (long long)kv_blocks,
              (long long)o.threads.threads);
  EngineBenchRunner run(model, o, kv_blocks);
  const bool ok = w.s1 ? RunS1(o, w, &run) : w.s2 ? RunS2(o, w, &run) : RunCustom(o, w, &run);
  if (!ok) return 1;
  if (!o.json_path.empty() && !WriteEngineBenchJson(o, w, cmdline, kv_blocks, run.results())) {
    return 1;
  }
  int failed = 0;
  for (const BenchResult& r : run.results()) failed += r.num_failed;
  return failed > 0 ? 1 : 0;
}
}  // namespace

WEFT_BENCH_VERB("engine", "benchmark the engine in-process (no HTTP)",
                RunBenchEngine);

}  // namespace weft::apps::bench_engine
