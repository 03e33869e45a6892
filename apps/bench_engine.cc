// `weft bench engine -m MODEL ...`: offline, in-process benchmark of the
// engine (scheduler + ModelExecutor) without HTTP. N requests of random
// token ids (seeded) with fixed prompt/output lengths arrive closed-loop at
// concurrency C or open-loop as a Poisson process at rate R; reports
// throughput (output and total tokens/s) and TTFT / ITL / E2E percentiles.
// Comma-separated lists for --concurrency, --rate, --prefill-chunk,
// --max-batched-tokens and --max-seqs run every combination side by side.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apps/bench.h"
#include "apps/flags.h"
#include "engine/engine.h"
#include "engine/model_executor.h"
#include "model/model.h"
#include "util/strings.h"

#ifndef WEFT_DEFAULT_MODEL
#define WEFT_DEFAULT_MODEL "models/gemma-3-270m-q4_k_m.gguf"
#endif

namespace weft::apps {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// One benchmark configuration (a point of the sweep).
struct BenchPoint {
  int64_t concurrency = 1;  // closed loop: requests in flight; 0 = no cap
  double rate = 0;          // > 0: Poisson arrivals per second
  int64_t prefill_chunk = 512;
  int64_t max_batched_tokens = 2048;
  int64_t max_seqs = 64;
};

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, max = 0, mean = 0;
};

// Linear interpolation between closest ranks (numpy's default).
Percentiles Summarize(std::vector<double> v) {
  Percentiles p;
  if (v.empty()) return p;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(v.size() - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, v.size() - 1);
    return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
  };
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  p.max = v.back();
  double s = 0;
  for (double x : v) s += x;
  p.mean = s / static_cast<double>(v.size());
  return p;
}

struct BenchResult {
  BenchPoint point;
  int num_ok = 0;
  int num_failed = 0;
  double duration_s = 0;
  int64_t prompt_tokens = 0;
  int64_t output_tokens = 0;
  Percentiles ttft_ms, itl_ms, e2e_ms;
  engine::SchedulerStats stats;
};

// Per-request timing, filled by the engine callback.
struct Timing {
  Clock::time_point submit, first, last, done;
  int tokens = 0;
  bool finished = false;
  bool failed = false;
  std::vector<double> itl_ms;
};

struct Workload {
  std::vector<std::vector<engine::TokenId>> prompts;
  int output_len = 0;
};

Workload MakeWorkload(const model::ModelConfig& mc, int n, int prompt_len,
                      int output_len, uint64_t seed) {
  // Plain vocabulary ids: skip the low ids (control tokens in most vocabs)
  // and the top quarter of big vocabs (Gemma's image/unused tokens).
  const int32_t v = static_cast<int32_t>(mc.n_vocab);
  const int32_t lo = v > 4096 ? 1000 : std::min(3, v - 1);
  const int32_t hi = v > 4096 ? v / 4 * 3 : v;
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int32_t> dist(lo, hi - 1);
  Workload w;
  w.output_len = output_len;
  for (int i = 0; i < n; ++i) {
    std::vector<engine::TokenId> p(static_cast<size_t>(prompt_len));
    for (auto& t : p) t = dist(rng);
    w.prompts.push_back(std::move(p));
  }
  return w;
}

StatusOr<BenchResult> RunPoint(const model::Model& model, const Workload& w,
                               const BenchPoint& pt, int64_t kv_blocks,
                               int threads, uint64_t seed) {
  engine::SchedulerConfig sc;
  sc.max_batched_tokens = static_cast<int>(pt.max_batched_tokens);
  sc.max_seqs = static_cast<int>(pt.max_seqs);
  sc.prefill_chunk = static_cast<int>(pt.prefill_chunk);
  sc.max_model_len = static_cast<int>(
      (w.prompts.empty() ? 0 : w.prompts[0].size()) + w.output_len + 8);
  sc.max_queue = std::max<int>(1024, static_cast<int>(w.prompts.size()) + 1);
  kv::KvCacheConfig kc;
  kc.num_blocks = static_cast<int>(kv_blocks);
  kc.block_size = 16;
  engine::ModelExecutorConfig ec;
  ec.num_threads = threads;
  ASSIGN_OR_RETURN(auto exec, engine::CreateModelExecutor(&model, kc, ec));
  ASSIGN_OR_RETURN(auto eng, engine::Engine::Create(sc, kc, std::move(exec)));

  const int n = static_cast<int>(w.prompts.size());
  std::vector<Timing> timing(static_cast<size_t>(n));
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, done = 0;
  auto submit = [&](int i) -> Status {
    engine::RequestSpec spec;
    spec.id = i;
    spec.prompt = w.prompts[static_cast<size_t>(i)];
    spec.stop.max_tokens = w.output_len;
    spec.sampling.temperature = 0;
    {
      std::lock_guard<std::mutex> lock(mu);
      timing[static_cast<size_t>(i)].submit = Clock::now();
      ++in_flight;
    }
    Status st = eng->Submit(std::move(spec), [&, i](const engine::RequestEvent& ev) {
      const Clock::time_point now = Clock::now();
      std::lock_guard<std::mutex> lock(mu);
      Timing& t = timing[static_cast<size_t>(i)];
      for (size_t k = 0; k < ev.new_tokens.size(); ++k) {
        if (t.tokens == 0) {
          t.first = now;
        } else {
          t.itl_ms.push_back(Ms(t.last, now));
        }
        t.last = now;
        ++t.tokens;
      }
      if (ev.finished) {
        t.finished = true;
        t.failed = ev.reason == engine::FinishReason::kError ||
                   ev.reason == engine::FinishReason::kAborted;
        t.done = now;
        --in_flight;
        ++done;
        cv.notify_all();
      }
    });
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      ++done;
      timing[static_cast<size_t>(i)].failed = true;
      cv.notify_all();
    }
    return st;
  };

  std::mt19937_64 rng(seed ^ 0x5bd1e995);
  std::exponential_distribution<double> gap(pt.rate > 0 ? pt.rate : 1.0);
  const int cap = pt.concurrency > 0 ? static_cast<int>(pt.concurrency) : n;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_arrival = start;
  for (int i = 0; i < n; ++i) {
    if (pt.rate > 0) {
      next_arrival += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(gap(rng)));
      std::this_thread::sleep_until(next_arrival);
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return in_flight < cap; });
    }
    Status st = submit(i);
    if (!st.ok()) {
      std::fprintf(stderr, "weft bench engine: request %d: %s\n", i,
                   st.ToString().c_str());
    }
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done == n; });
  }
  const Clock::time_point end = Clock::now();
  eng->WaitUntilIdle();

  BenchResult r;
  r.point = pt;
  r.duration_s = Ms(start, end) / 1000.0;
  r.stats = eng->stats();
  std::vector<double> ttft, itl, e2e;
  for (int i = 0; i < n; ++i) {
    const Timing& t = timing[static_cast<size_t>(i)];
    if (t.failed || !t.finished) {
      ++r.num_failed;
      continue;
    }
    ++r.num_ok;
    r.prompt_tokens += static_cast<int64_t>(w.prompts[static_cast<size_t>(i)].size());
    r.output_tokens += t.tokens;
    if (t.tokens > 0) ttft.push_back(Ms(t.submit, t.first));
    itl.insert(itl.end(), t.itl_ms.begin(), t.itl_ms.end());
    e2e.push_back(Ms(t.submit, t.done));
  }
  r.ttft_ms = Summarize(std::move(ttft));
  r.itl_ms = Summarize(std::move(itl));
  r.e2e_ms = Summarize(std::move(e2e));
  return r;
}

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

std::string PctJson(const Percentiles& p) {
  return StrFormat(
      "{\"p50\": %.3f, \"p90\": %.3f, \"p99\": %.3f, \"max\": %.3f, "
      "\"mean\": %.3f}",
      p.p50, p.p90, p.p99, p.max, p.mean);
}

std::string ResultJson(const BenchResult& r) {
  const BenchPoint& p = r.point;
  return StrFormat(
      "    {\"concurrency\": %lld, \"rate\": %g, \"prefill_chunk\": %lld, "
      "\"max_batched_tokens\": %lld, \"max_seqs\": %lld,\n"
      "     \"completed\": %d, \"failed\": %d, \"duration_s\": %.4f, "
      "\"prompt_tokens\": %lld, \"output_tokens\": %lld,\n"
      "     \"output_tok_s\": %.3f, \"total_tok_s\": %.3f, "
      "\"num_steps\": %lld, \"num_preemptions\": %lld,\n"
      "     \"ttft_ms\": %s,\n     \"itl_ms\": %s,\n     \"e2e_ms\": %s}",
      (long long)p.concurrency, p.rate, (long long)p.prefill_chunk,
      (long long)p.max_batched_tokens, (long long)p.max_seqs, r.num_ok,
      r.num_failed, r.duration_s, (long long)r.prompt_tokens,
      (long long)r.output_tokens,
      r.duration_s > 0 ? r.output_tokens / r.duration_s : 0.0,
      r.duration_s > 0 ? (r.prompt_tokens + r.output_tokens) / r.duration_s
                       : 0.0,
      (long long)r.stats.num_steps, (long long)r.stats.num_preemptions,
      PctJson(r.ttft_ms).c_str(), PctJson(r.itl_ms).c_str(),
      PctJson(r.e2e_ms).c_str());
}

void PrintRow(const BenchResult& r) {
  const BenchPoint& p = r.point;
  const std::string arrival =
      p.rate > 0 ? StrFormat("rate %g/s", p.rate)
                 : StrFormat("c=%lld", (long long)p.concurrency);
  std::printf(
      "%-10s chunk %-5lld mbt %-5lld | %3d ok %2d fail %7.2fs | out %8.2f "
      "tot %9.2f tok/s | TTFT ms p50 %8.1f p90 %8.1f p99 %8.1f max %8.1f | "
      "ITL ms p50 %6.1f p90 %6.1f p99 %6.1f max %6.1f | E2E ms p50 %8.1f "
      "p90 %8.1f p99 %8.1f max %8.1f\n",
      arrival.c_str(), (long long)p.prefill_chunk,
      (long long)p.max_batched_tokens, r.num_ok, r.num_failed, r.duration_s,
      r.duration_s > 0 ? r.output_tokens / r.duration_s : 0.0,
      r.duration_s > 0 ? (r.prompt_tokens + r.output_tokens) / r.duration_s
                       : 0.0,
      r.ttft_ms.p50, r.ttft_ms.p90, r.ttft_ms.p99, r.ttft_ms.max,
      r.itl_ms.p50, r.itl_ms.p90, r.itl_ms.p99, r.itl_ms.max, r.e2e_ms.p50,
      r.e2e_ms.p90, r.e2e_ms.p99, r.e2e_ms.max);
  std::fflush(stdout);
}

int RunBenchEngine(int argc, char** argv) {
  FlagSet flags(
      "weft bench engine [-m MODEL] [--num-requests N] [--prompt-len P] "
      "[--output-len O] [--concurrency C[,C...]] [--rate R[,R...]] "
      "[--prefill-chunk K[,K...]] [--json FILE]",
      "Offline in-process engine benchmark: random prompts through the "
      "scheduler and the model executor (no HTTP). Lists sweep every "
      "combination.");
  std::string model_path = WEFT_DEFAULT_MODEL, json_path;
  int64_t num_requests = 16, prompt_len = 256, output_len = 128;
  std::string concurrency = "1", rates = "0", chunks = "512", mbts = "2048",
              max_seqs = "64";
  int64_t threads = 0, seed = 1, warmup = 1;
  double kv_gib = 1.0;
  flags.String("model", &model_path, "GGUF model file", 'm');
  flags.Int("num-requests", &num_requests, "requests per configuration", 'n');
  flags.Int("prompt-len", &prompt_len, "prompt tokens per request");
  flags.Int("output-len", &output_len, "output tokens per request (no EOS stop)");
  flags.String("concurrency", &concurrency,
               "closed loop: requests in flight, e.g. 1,4 (with --rate: a cap, 0 = none)");
  flags.String("rate", &rates, "open loop: Poisson arrivals per second, e.g. 0.5,1; 0 = closed loop");
  flags.String("prefill-chunk", &chunks, "prompt tokens per sequence per pass; 0 = no chunking");
  flags.String("max-batched-tokens", &mbts, "token budget of a pass");
  flags.String("max-seqs", &max_seqs, "running sequences at most");
  flags.Double("kv-gib", &kv_gib, "KV cache size in GiB (float32 K/V)");
  flags.Int("threads", &threads, "compute threads; 0 = all cores", 't');
  flags.Int("seed", &seed, "seed of the random prompts and arrivals");
  flags.Int("warmup", &warmup, "warm-up requests before each configuration");
  flags.String("json", &json_path, "write the results as JSON to FILE");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  auto usage = [](const std::string& m) {
    std::fprintf(stderr, "weft bench engine: %s\n", m.c_str());
    return 2;
  };
  if (!args.empty()) return usage("unexpected argument '" + args[0] + "'");
  if (num_requests < 1 || num_requests > 100000) return usage("--num-requests must be in [1, 100000]");
  if (prompt_len < 1 || prompt_len > 1000000) return usage("--prompt-len must be in [1, 1000000]");
  if (output_len < 1 || output_len > 1000000) return usage("--output-len must be in [1, 1000000]");
  if (threads < 0 || threads > 1024) return usage("--threads must be in [0, 1024]");
  if (warmup < 0 || warmup > 1000) return usage("--warmup must be in [0, 1000]");
  if (!(kv_gib > 0) || kv_gib > 4096) return usage("--kv-gib must be in (0, 4096]");
  std::vector<int64_t> cs, ks, ms, ss;
  std::vector<double> rs;
  if (!ParseList(concurrency, &cs)) return usage("bad --concurrency list");
  if (!ParseList(rates, &rs)) return usage("bad --rate list");
  if (!ParseList(chunks, &ks)) return usage("bad --prefill-chunk list");
  if (!ParseList(mbts, &ms)) return usage("bad --max-batched-tokens list");
  if (!ParseList(max_seqs, &ss)) return usage("bad --max-seqs list");
  std::vector<BenchPoint> points;
  for (double r : rs) {
    for (int64_t c : cs) {
      if (r == 0 && c < 1) return usage("closed loop needs --concurrency >= 1");
      for (int64_t m : ms) {
        for (int64_t s : ss) {
          engine::SchedulerConfig check;
          check.max_batched_tokens = static_cast<int>(m);
          check.max_seqs = static_cast<int>(s);
          if (Status st = check.Validate(); !st.ok()) return usage(st.message());
          for (int64_t k : ks) {
            BenchPoint p;
            p.rate = r;
            p.concurrency = c;
            p.prefill_chunk = k;
            p.max_batched_tokens = m;
            p.max_seqs = s;
            points.push_back(p);
          }
        }
      }
    }
  }

  auto model_or = model::Model::Load(model_path);
  if (!model_or.ok()) {
    std::fprintf(stderr, "weft bench engine: %s\n",
                 model_or.status().ToString().c_str());
    return 2;
  }
  const model::Model& model = **model_or;
  const int64_t kv_blocks = engine::KvBlocksForBytes(
      model.config(), 16, static_cast<uint64_t>(kv_gib * (1ull << 30)));
  if (kv_blocks < (prompt_len + output_len + 15) / 16 + 1) {
    return usage(StrFormat("--kv-gib %.3g holds %lld blocks of 16 tokens; one "
                           "request needs %lld", kv_gib, (long long)kv_blocks,
                           (long long)((prompt_len + output_len + 15) / 16 + 1)));
  }
  std::printf("model %s (%s), %lld requests x (prompt %lld, output %lld), "
              "KV %lld blocks x 16, threads %lld\n",
              model_path.c_str(), model.config().Summary().c_str(),
              (long long)num_requests, (long long)prompt_len,
              (long long)output_len, (long long)kv_blocks,
              (long long)threads);
  const Workload work = MakeWorkload(model.config(),
                                     static_cast<int>(num_requests),
                                     static_cast<int>(prompt_len),
                                     static_cast<int>(output_len),
                                     static_cast<uint64_t>(seed));
  const Workload warm = MakeWorkload(model.config(),
                                     static_cast<int>(warmup), 16, 4,
                                     static_cast<uint64_t>(seed) + 99);
  std::vector<BenchResult> results;
  for (const BenchPoint& p : points) {
    if (warmup > 0) {
      BenchPoint wp = p;
      wp.rate = 0;
      wp.concurrency = 1;
      (void)RunPoint(model, warm, wp, kv_blocks, static_cast<int>(threads),
                     static_cast<uint64_t>(seed));
    }
    StatusOr<BenchResult> r = RunPoint(model, work, p, kv_blocks,
                                       static_cast<int>(threads),
                                       static_cast<uint64_t>(seed));
    if (!r.ok()) {
      std::fprintf(stderr, "weft bench engine: %s\n",
                   r.status().ToString().c_str());
      return 1;
    }
    PrintRow(*r);
    results.push_back(std::move(*r));
  }
  if (!json_path.empty()) {
    FILE* f = std::fopen(json_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "weft bench engine: cannot write %s\n",
                   json_path.c_str());
      return 1;
    }
    std::fprintf(f,
                 "{\n  \"bench\": \"engine\",\n  \"model\": \"%s\",\n"
                 "  \"num_requests\": %lld, \"prompt_len\": %lld, "
                 "\"output_len\": %lld, \"kv_blocks\": %lld, \"threads\": %lld,\n"
                 "  \"runs\": [\n",
                 CEscape(model_path, 4096).c_str(), (long long)num_requests,
                 (long long)prompt_len, (long long)output_len,
                 (long long)kv_blocks, (long long)threads);
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

}  // namespace weft::apps
