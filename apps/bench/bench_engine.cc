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

int RunBenchEngine(int argc, char** argv) {
  FlagSet flags(
      "weft bench engine [-m MODEL] [--workload S1|S2] [--num-requests N] "
      "[--prompt-len P] [--output-len O] [--concurrency C[,C...]] "
      "[--rate R[,R...]] [--prefill-chunk K[,K...]] "
      "[--max-batched-tokens B[,B...]] [--json FILE] [--trace FILE]",
      "Offline in-process engine benchmark: random prompts through the "
      "scheduler and the model executor (no HTTP). Lists sweep every "
      "combination. --workload S1|S2 runs a serving workload for every "
      "scheduler configuration plus an unchunked one, side by side.");
  const engine::SchedulerConfig defaults;
  ModelFlags model_flags(WEFT_BENCH_MODEL);
  ThreadFlags thread_flags;
  std::string json_path, trace_path;
  std::string workload = "custom";
  int64_t num_requests = 16, prompt_len = 256, output_len = 128;
  int64_t per_client = 4;
  std::string concurrency = "1", rates = "0",
              chunks = std::to_string(defaults.prefill_chunk),
              mbts = std::to_string(defaults.max_batched_tokens),
              max_seqs = std::to_string(defaults.max_seqs);
  int64_t seed = 1, warmup = 1;
  int64_t s2_streams = 8, s2_long_prompt = 2048, s2_long_output = 16,
          s2_long_count = 3;
  double kv_gib = 1.0, s2_interval = 10.0;
  bool unchunked = true;
  model_flags.Register(&flags);
  flags.String("workload", &workload,
               "custom (the flags below), S1 (ladder) or S2 (stall test)");
  flags.Int("num-requests", &num_requests,
            "requests per configuration (S1: default "
            "--s1-requests-per-client * c)",
            'n');
  flags.Int("s1-requests-per-client", &per_client,
            "S1: requests per unit of concurrency (n = this * c)");
  flags.Int("prompt-len", &prompt_len,
            "prompt tokens per request (S1 default 256, S2 streams 64)");
  flags.Int("output-len", &output_len,
            "output tokens per request, no EOS stop (S1 128, S2 streams 512)");
  flags.String("concurrency", &concurrency,
               "closed loop: requests in flight, e.g. 1,4 (with --rate: a "
               "cap, 0 = none; S1 default 1,4,8,16)");
  flags.String(
      "rate", &rates,
      "open loop: Poisson arrivals per second, e.g. 0.5,1; 0 = closed loop");
  flags.String("prefill-chunk", &chunks,
               "prompt tokens per sequence per pass; 0 = no chunking");
  flags.String("max-batched-tokens", &mbts, "token budget of a pass");
  flags.String("max-seqs", &max_seqs, "running sequences at most");
  flags.Bool("unchunked", &unchunked,
             "S1/S2: add a column with chunking disabled (prefill_chunk 0, "
             "budget max(2048, longest prompt + max_seqs))");
  flags.Int("s2-streams", &s2_streams, "S2: decoding streams");
  flags.Int("s2-long-prompt", &s2_long_prompt, "S2: long prompt tokens");
  flags.Int("s2-long-output", &s2_long_output,
            "S2: long requests' output tokens");
  flags.Int("s2-long-count", &s2_long_count, "S2: long requests per run");
  flags.Double("s2-interval", &s2_interval,
               "S2: seconds between long arrivals (the first at 1x)");
  flags.Double("kv-gib", &kv_gib, "KV cache size in GiB (float32 K/V)");
  thread_flags.Register(&flags);
  flags.Int("seed", &seed, "seed of the random prompts and arrivals");
  flags.Int("warmup", &warmup, "warm-up requests before each configuration");
  flags.String("json", &json_path, "write the results as JSON to FILE");
  flags.String("trace", &trace_path,
               "write the engine trace of every measured run to FILE "
               "(JSON lines, docs/trace.md)");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  auto usage = [](const std::string& m) {
    std::fprintf(stderr, "weft bench engine: %s\n", m.c_str());
    return 2;
  };
  if (!args.empty()) return usage("unexpected argument '" + args[0] + "'");
  const bool s1 = workload == "S1" || workload == "s1";
  const bool s2 = workload == "S2" || workload == "s2";
  if (!s1 && !s2 && workload != "custom") {
    return usage("--workload must be custom, S1 or S2");
  }
  if (s1) {
    if (!flags.WasSet("prompt-len")) prompt_len = 256;
    if (!flags.WasSet("output-len")) output_len = 128;
    if (!flags.WasSet("concurrency")) concurrency = "1,4,8,16";
  }
  if (s2) {
    if (!flags.WasSet("prompt-len")) prompt_len = 64;
    if (!flags.WasSet("output-len")) output_len = 512;
  }
  if (num_requests < 1 || num_requests > 100000)
    return usage("--num-requests must be in [1, 100000]");
  if (per_client < 1 || per_client > 10000)
    return usage("--s1-requests-per-client must be in [1, 10000]");
  if (prompt_len < 1 || prompt_len > 1000000)
    return usage("--prompt-len must be in [1, 1000000]");
  if (output_len < 1 || output_len > 1000000)
    return usage("--output-len must be in [1, 1000000]");
  if (thread_flags.threads < 0 || thread_flags.threads > 1024)
    return usage("--threads must be in [0, 1024]");
  if (warmup < 0 || warmup > 1000)
    return usage("--warmup must be in [0, 1000]");
  if (!(kv_gib > 0) || kv_gib > 4096)
    return usage("--kv-gib must be in (0, 4096]");
  if (s2_streams < 1 || s2_streams > 4096)
    return usage("--s2-streams must be in [1, 4096]");
  if (s2_long_prompt < 1 || s2_long_prompt > 1000000)
    return usage("--s2-long-prompt must be in [1, 1000000]");
  if (s2_long_output < 1 || s2_long_output > 1000000)
    return usage("--s2-long-output must be in [1, 1000000]");
  if (s2_long_count < 1 || s2_long_count > 1000)
    return usage("--s2-long-count must be in [1, 1000]");
  if (!(s2_interval >= 0) || s2_interval > 3600)
    return usage("--s2-interval must be in [0, 3600]");
  std::vector<int64_t> cs, ks, ms, ss;
  std::vector<double> rs;
  if (!ParseList(concurrency, &cs)) return usage("bad --concurrency list");
  if (!ParseList(rates, &rs)) return usage("bad --rate list");
  if (!ParseList(chunks, &ks)) return usage("bad --prefill-chunk list");
  if (!ParseList(mbts, &ms)) return usage("bad --max-batched-tokens list");
  if (!ParseList(max_seqs, &ss)) return usage("bad --max-seqs list");
  for (int64_t m : ms) {
    for (int64_t s : ss) {
      engine::SchedulerConfig check;
      check.max_batched_tokens = static_cast<int>(m);
      check.max_seqs = static_cast<int>(s);
      if (Status st = check.Validate(); !st.ok()) return usage(st.message());
    }
  }
  // Scheduler configurations: every (budget, max_seqs, chunk) combination.
  std::vector<BenchPoint> configs;
  for (int64_t m : ms) {
    for (int64_t s : ss) {
      for (int64_t k : ks) {
        BenchPoint p;
        p.prefill_chunk = k;
        p.max_batched_tokens = m;
        p.max_seqs = s;
        p.label = ss.size() > 1
                      ? StrFormat("budget %lld chunk %lld seqs %lld",
                                  (long long)m, (long long)k, (long long)s)
                      : StrFormat("budget %lld chunk %lld", (long long)m,
                                  (long long)k);
        configs.push_back(p);
      }
    }
  }
  std::vector<BenchPoint> points;  // custom: the sweep
  if (!s1 && !s2) {
    for (double r : rs) {
      for (int64_t c : cs) {
        if (r == 0 && c < 1)
          return usage("closed loop needs --concurrency >= 1");
        for (BenchPoint p : configs) {
          p.rate = r;
          p.concurrency = c;
          p.label.clear();
          points.push_back(p);
        }
      }
    }
  } else {
    for (int64_t c : cs) {
      if (c < 1) return usage("S1 needs --concurrency >= 1");
    }
    const int64_t longest =
        s2 ? std::max(prompt_len, s2_long_prompt) : prompt_len;
    if (unchunked) {
      const int64_t seqs = *std::max_element(ss.begin(), ss.end());
      BenchPoint p;
      p.prefill_chunk = 0;
      p.max_seqs = seqs;
      p.max_batched_tokens = std::max<int64_t>(2048, longest + seqs);
      p.label =
          StrFormat("unchunked (budget %lld)", (long long)p.max_batched_tokens);
      configs.push_back(p);
    }
  }

  auto model_or = model::Model::Load(model_flags.path);
  if (!model_or.ok()) {
    std::fprintf(stderr, "weft bench engine: %s\n",
                 model_or.status().ToString().c_str());
    return 2;
  }
  const model::Model& model = **model_or;
  const int64_t kv_blocks = engine::KvBlocksForBytes(
      model.config(), 16, static_cast<uint64_t>(kv_gib * (1ull << 30)));
  const int64_t one_len =
      std::max(prompt_len + output_len,
               s2 ? s2_long_prompt + s2_long_output : int64_t{0});
  if (kv_blocks < (one_len + 15) / 16 + 1) {
    return usage(StrFormat(
        "--kv-gib %.3g holds %lld blocks of 16 tokens; one "
        "request needs %lld",
        kv_gib, (long long)kv_blocks, (long long)((one_len + 15) / 16 + 1)));
  }
  std::string cmdline = "weft bench engine";
  for (int i = 1; i < argc; ++i) cmdline += std::string(" ") + argv[i];
  std::printf("## %s\n\nmodel %s (%s), KV %lld blocks x 16, threads %lld\n",
              cmdline.c_str(), model_flags.path.c_str(),
              model.config().Summary().c_str(), (long long)kv_blocks,
              (long long)thread_flags.threads);
  const Workload warm = MakeWorkload(model.config(), static_cast<int>(warmup),
                                     16, 4, static_cast<uint64_t>(seed) + 99);
  int traced_runs = 0;
  std::vector<BenchResult> results;
  // Warms up, runs one point, traces it; false after an engine error.
  auto run = [&](const Workload& w, const BenchPoint& p) -> bool {
    if (warmup > 0) {
      BenchPoint wp = p;
      wp.rate = 0;
      wp.concurrency = 1;
      (void)RunPoint(model, warm, wp, kv_blocks, static_cast<int>(thread_flags.threads),
                     static_cast<uint64_t>(seed), engine::EngineOptions());
    }
    engine::EngineOptions eo;
    eo.trace_path = trace_path;
    eo.trace_append = traced_runs++ > 0;
    StatusOr<BenchResult> r =
        RunPoint(model, w, p, kv_blocks, static_cast<int>(thread_flags.threads),
                 static_cast<uint64_t>(seed), eo);
    if (!r.ok()) {
      std::fprintf(stderr, "weft bench engine: %s\n",
                   r.status().ToString().c_str());
      return false;
    }
    results.push_back(std::move(*r));
    return true;
  };
  std::vector<std::string> labels;
  for (const BenchPoint& p : configs) labels.push_back(p.label);
  if (!s1 && !s2) {
    std::printf("%lld requests x (prompt %lld, output %lld)\n",
                (long long)num_requests, (long long)prompt_len,
                (long long)output_len);
    const Workload work =
        MakeWorkload(model.config(), static_cast<int>(num_requests),
                     static_cast<int>(prompt_len), static_cast<int>(output_len),
                     static_cast<uint64_t>(seed));
    for (const BenchPoint& p : points) {
      if (!run(work, p)) return 1;
      PrintRow(results.back());
    }
  } else if (s1) {
    std::printf("\nS1: prompt %lld, output %lld, closed loop\n\n",
                (long long)prompt_len, (long long)output_len);
    Table table(labels);
    for (int64_t c : cs) {
      const int64_t n =
          flags.WasSet("num-requests") ? num_requests : per_client * c;
      const Workload work = MakeWorkload(
          model.config(), static_cast<int>(n), static_cast<int>(prompt_len),
          static_cast<int>(output_len), static_cast<uint64_t>(seed));
      std::vector<const BenchResult*> row;
      const size_t first = results.size();
      for (BenchPoint p : configs) {  // interleaved: A, B for each c
        p.concurrency = c;
        if (!run(work, p)) return 1;
        std::fprintf(stderr, "  c=%lld %s: %.1f s\n", (long long)c,
                     p.label.c_str(), results.back().duration_s);
      }
      for (size_t i = first; i < results.size(); ++i)
        row.push_back(&results[i]);
      AddS1Rows(c, row, &table);
    }
    std::vector<const BenchResult*> all;
    for (const BenchResult& r : results) all.push_back(&r);
    table.Print();
  } else {
    std::printf(
        "\nS2: %lld streams (prompt %lld, output %lld) from t=0; %lld "
        "requests of %lld prompt tokens (output %lld) at %.3g s intervals\n\n",
        (long long)s2_streams, (long long)prompt_len, (long long)output_len,
        (long long)s2_long_count, (long long)s2_long_prompt,
        (long long)s2_long_output, s2_interval);
    Workload work =
        MakeWorkload(model.config(), static_cast<int>(s2_streams),
                     static_cast<int>(prompt_len), static_cast<int>(output_len),
                     static_cast<uint64_t>(seed));
    const Workload longs = MakeWorkload(
        model.config(), static_cast<int>(s2_long_count),
        static_cast<int>(s2_long_prompt), static_cast<int>(s2_long_output),
        static_cast<uint64_t>(seed) + 7);
    work.output_lens.assign(work.prompts.size(), static_cast<int>(output_len));
    work.arrival_s.assign(work.prompts.size(), 0.0);
    work.is_long.assign(work.prompts.size(), false);
    for (size_t k = 0; k < longs.prompts.size(); ++k) {
      work.prompts.push_back(longs.prompts[k]);
      work.output_lens.push_back(static_cast<int>(s2_long_output));
      work.arrival_s.push_back(s2_interval * static_cast<double>(k + 1));
      work.is_long.push_back(true);
    }
    for (const BenchPoint& p : configs) {
      if (!run(work, p)) return 1;
      std::fprintf(stderr, "  %s: %.1f s\n", p.label.c_str(),
                   results.back().duration_s);
    }
    std::vector<const BenchResult*> row;
    for (const BenchResult& r : results) row.push_back(&r);
    Table table(labels);
    AddS2Rows(row, &table);
    AddEngineRows(row, &table);
    table.Print();
    for (const BenchResult& r : results) {
      if (r.num_prefill_gaps == 0) {
        std::fprintf(stderr,
                     "weft bench engine: %s: no stream token arrived during "
                     "a long prefill (streams too short for the interval?)\n",
                     r.point.label.c_str());
      }
    }
  }
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "weft bench engine: cannot write %s\n",
                   json_path.c_str());
      return 1;
    }
    std::fprintf(
        f,
        "{\n  \"bench\": \"engine\",\n  \"workload\": \"%s\",\n"
        "  \"command\": \"%s\",\n  \"model\": \"%s\",\n"
        "  \"num_requests\": %lld, \"prompt_len\": %lld, "
        "\"output_len\": %lld, \"kv_blocks\": %lld, \"threads\": %lld,\n"
        "  \"runs\": [\n",
        s1   ? "S1"
        : s2 ? "S2"
             : "custom",
        CEscape(cmdline, 4096).c_str(), CEscape(model_flags.path, 4096).c_str(),
        (long long)num_requests, (long long)prompt_len, (long long)output_len,
        (long long)kv_blocks, (long long)thread_flags.threads);
    for (size_t i = 0; i < results.size(); ++i) {
      std::fprintf(f, "%s%s\n", ResultJson(results[i]).c_str(),
                   i + 1 < results.size() ? "," : "");
    }
    std::fprintf(f, "  ]\n}\n");
    if (std::fclose(f) != 0) {
      std::fprintf(stderr, "weft bench engine: cannot write %s\n",
                   json_path.c_str());
      return 1;
    }
  }
  int failed = 0;
  for (const BenchResult& r : results) failed += r.num_failed;
  return failed > 0 ? 1 : 0;
}

}  // namespace

WEFT_BENCH_VERB("engine", "benchmark the engine in-process (no HTTP)",
                RunBenchEngine);

}  // namespace weft::apps::bench_engine
