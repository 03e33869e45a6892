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
// requests each (--s1-requests-per-client); S2: 8 streams decoding (prompt 64, output 512) while a
// 2048-token prompt arrives every 10 s, 3 times) for every scheduler
// configuration of the lists plus an "unchunked" one (prefill_chunk 0,
// budget max(2048, longest prompt + max_seqs)), interleaved, and prints
// one markdown table with a column per configuration. --trace FILE writes
// the engine trace (docs/trace.md) of every measured run into FILE.
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
#include "apps/build_info.h"
#include "apps/flags.h"
#include "engine/engine.h"
#include "engine/model_executor.h"
#include "model/model.h"
#include "util/strings.h"

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
  std::string label;        // workload column name ("" for sweeps)
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
  Percentiles ttft_ms, itl_ms, e2e_ms, tpot_ms;
  engine::SchedulerStats stats;
  engine::EngineStats loop;
  // S2 only: gaps between the streams' tokens that end while a long prompt
  // is being prefilled (its arrival .. its first token) and all others.
  Percentiles itl_prefill_ms, itl_base_ms, long_ttft_ms;
  int64_t num_prefill_gaps = 0, num_base_gaps = 0;
};

// Per-request timing, filled by the engine callback.
struct Timing {
  Clock::time_point submit, first, last, done;
  int tokens = 0;
  bool finished = false;
  bool failed = false;
  std::vector<double> itl_ms;
  std::vector<Clock::time_point> token_times;  // every token's arrival
};

struct Workload {
  std::vector<std::vector<engine::TokenId>> prompts;
  int output_len = 0;
  // Optional, per request: output length (overrides output_len), fixed
  // arrival offset in seconds (all requests then arrive on this schedule,
  // with no concurrency cap), and "long" (an S2 long-prompt request).
  std::vector<int> output_lens;
  std::vector<double> arrival_s;
  std::vector<bool> is_long;

  int OutputLen(size_t i) const {
    return i < output_lens.size() ? output_lens[i] : output_len;
  }
  int MaxLen() const {
    int m = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      m = std::max(m, static_cast<int>(prompts[i].size()) + OutputLen(i));
    }
    return m;
  }
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

// Fills the S2 figures: the streams' token gaps split by whether they end
// inside a long request's prefill window (arrival .. first token].
void SummarizeS2(const Workload& w, const std::vector<Timing>& timing,
                 BenchResult* r) {
  std::vector<std::pair<Clock::time_point, Clock::time_point>> windows;
  std::vector<double> long_ttft;
  for (size_t i = 0; i < timing.size(); ++i) {
    if (i >= w.is_long.size() || !w.is_long[i]) continue;
    const Timing& t = timing[i];
    if (t.tokens == 0) continue;
    windows.emplace_back(t.submit, t.first);
    long_ttft.push_back(Ms(t.submit, t.first));
  }
  std::vector<double> during, base;
  for (size_t i = 0; i < timing.size(); ++i) {
    if (i < w.is_long.size() && w.is_long[i]) continue;
    const std::vector<Clock::time_point>& tt = timing[i].token_times;
    for (size_t k = 1; k < tt.size(); ++k) {
      bool in = false;
      for (const auto& [a, b] : windows) in |= tt[k] > a && tt[k] <= b;
      (in ? during : base).push_back(Ms(tt[k - 1], tt[k]));
    }
  }
  r->num_prefill_gaps = static_cast<int64_t>(during.size());
  r->num_base_gaps = static_cast<int64_t>(base.size());
  r->itl_prefill_ms = Summarize(std::move(during));
  r->itl_base_ms = Summarize(std::move(base));
  r->long_ttft_ms = Summarize(std::move(long_ttft));
}

StatusOr<BenchResult> RunPoint(const model::Model& model, const Workload& w,
                               const BenchPoint& pt, int64_t kv_blocks,
                               int threads, uint64_t seed,
                               const engine::EngineOptions& eo) {
  engine::SchedulerConfig sc;
  sc.max_batched_tokens = static_cast<int>(pt.max_batched_tokens);
  sc.max_seqs = static_cast<int>(pt.max_seqs);
  sc.prefill_chunk = static_cast<int>(pt.prefill_chunk);
  sc.max_model_len = w.MaxLen() + 8;
  sc.max_queue = std::max<int>(1024, static_cast<int>(w.prompts.size()) + 1);
  kv::KvCacheConfig kc;
  kc.num_blocks = static_cast<int>(kv_blocks);
  kc.block_size = 16;
  engine::ModelExecutorConfig ec;
  ec.num_threads = threads;
  ASSIGN_OR_RETURN(auto exec, engine::CreateModelExecutor(&model, kc, ec));
  ASSIGN_OR_RETURN(auto eng,
                   engine::Engine::Create(sc, kc, std::move(exec), eo));

  const int n = static_cast<int>(w.prompts.size());
  std::vector<Timing> timing(static_cast<size_t>(n));
  std::mutex mu;
  std::condition_variable cv;
  int in_flight = 0, done = 0;
  auto submit = [&](int i) -> Status {
    engine::RequestSpec spec;
    spec.id = i;
    spec.prompt = w.prompts[static_cast<size_t>(i)];
    spec.stop.max_tokens = w.OutputLen(static_cast<size_t>(i));
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
        t.token_times.push_back(now);
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
  const bool scheduled = !w.arrival_s.empty();
  const int cap =
      pt.concurrency > 0 && !scheduled ? static_cast<int>(pt.concurrency) : n;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_arrival = start;
  for (int i = 0; i < n; ++i) {
    if (scheduled) {
      next_arrival = start + std::chrono::duration_cast<Clock::duration>(
                                 std::chrono::duration<double>(
                                     w.arrival_s[static_cast<size_t>(i)]));
      std::this_thread::sleep_until(next_arrival);
    } else if (pt.rate > 0) {
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
  r.loop = eng->loop_stats();
  std::vector<double> ttft, itl, e2e, tpot;
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
    if (t.tokens > 1) {
      tpot.push_back((Ms(t.submit, t.done) - Ms(t.submit, t.first)) /
                     (t.tokens - 1));
    }
    itl.insert(itl.end(), t.itl_ms.begin(), t.itl_ms.end());
    e2e.push_back(Ms(t.submit, t.done));
  }
  r.ttft_ms = Summarize(std::move(ttft));
  r.itl_ms = Summarize(std::move(itl));
  r.e2e_ms = Summarize(std::move(e2e));
  r.tpot_ms = Summarize(std::move(tpot));
  if (!w.is_long.empty()) SummarizeS2(w, timing, &r);
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

// The fields after e2e_ms: TPOT, the engine's mean phase times, and the S2
// figures when the workload had long requests.
std::string ExtraJson(const BenchResult& r) {
  const engine::EngineStats& l = r.loop;
  std::string s = StrFormat(
      ",\n     \"label\": \"%s\", \"tpot_ms\": %s,\n"
      "     \"engine\": {\"passes\": %lld, \"decode_tokens\": %lld, "
      "\"prefill_tokens\": %lld, \"mean_schedule_ms\": %.4f, "
      "\"mean_execute_ms\": %.4f, \"mean_update_ms\": %.4f, "
      "\"mean_emit_ms\": %.4f, \"trace_ms\": %.3f}",
      CEscape(r.point.label, 128).c_str(), PctJson(r.tpot_ms).c_str(),
      (long long)l.num_passes, (long long)l.num_decode_tokens,
      (long long)l.num_prefill_tokens, l.Mean(l.schedule_ms),
      l.Mean(l.execute_ms), l.Mean(l.update_ms), l.Mean(l.emit_ms),
      l.trace_ms);
  if (r.num_prefill_gaps + r.num_base_gaps > 0 || r.long_ttft_ms.max > 0) {
    s += StrFormat(
        ",\n     \"s2\": {\"prefill_gaps\": %lld, \"base_gaps\": %lld, "
        "\"itl_prefill_ms\": %s, \"itl_base_ms\": %s, "
        "\"long_ttft_ms\": %s}",
        (long long)r.num_prefill_gaps, (long long)r.num_base_gaps,
        PctJson(r.itl_prefill_ms).c_str(), PctJson(r.itl_base_ms).c_str(),
        PctJson(r.long_ttft_ms).c_str());
  }
  return s;
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
      "     \"ttft_ms\": %s,\n     \"itl_ms\": %s,\n     \"e2e_ms\": %s%s}",
      (long long)p.concurrency, p.rate, (long long)p.prefill_chunk,
      (long long)p.max_batched_tokens, (long long)p.max_seqs, r.num_ok,
      r.num_failed, r.duration_s, (long long)r.prompt_tokens,
      (long long)r.output_tokens,
      r.duration_s > 0 ? r.output_tokens / r.duration_s : 0.0,
      r.duration_s > 0 ? (r.prompt_tokens + r.output_tokens) / r.duration_s
                       : 0.0,
      (long long)r.stats.num_steps, (long long)r.stats.num_preemptions,
      PctJson(r.ttft_ms).c_str(), PctJson(r.itl_ms).c_str(),
      PctJson(r.e2e_ms).c_str(), ExtraJson(r).c_str());
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

// A markdown table: one row per metric, one column per configuration.
class Table {
 public:
  explicit Table(std::vector<std::string> columns)
      : columns_(std::move(columns)) {}
  void Row(std::string name, std::vector<std::string> cells) {
    rows_.emplace_back(std::move(name), std::move(cells));
  }
  void Print() const {
    std::printf("| metric |");
    for (const std::string& c : columns_) std::printf(" %s |", c.c_str());
    std::printf("\n|---|");
    for (size_t i = 0; i < columns_.size(); ++i) std::printf("---|");
    std::printf("\n");
    for (const auto& [name, cells] : rows_) {
      std::printf("| %s |", name.c_str());
      for (const std::string& c : cells) std::printf(" %s |", c.c_str());
      std::printf("\n");
    }
    std::fflush(stdout);
  }

 private:
  std::vector<std::string> columns_;
  std::vector<std::pair<std::string, std::vector<std::string>>> rows_;
};

// One cell per column: f(result of that column).
template <typename F>
std::vector<std::string> Cells(const std::vector<const BenchResult*>& rs,
                               F f) {
  std::vector<std::string> out;
  for (const BenchResult* r : rs) out.push_back(f(*r));
  return out;
}

double OutTokS(const BenchResult& r) {
  return r.duration_s > 0 ? r.output_tokens / r.duration_s : 0.0;
}

void AddS1Rows(int64_t c, const std::vector<const BenchResult*>& rs,
               Table* t) {
  const std::string p = StrFormat("c=%lld ", (long long)c);
  t->Row(p + "output tok/s", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.1f", OutTokS(r));
         }));
  t->Row(p + "TTFT p50 / p99 ms", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.0f / %.0f", r.ttft_ms.p50, r.ttft_ms.p99);
         }));
  t->Row(p + "ITL p50 / p99 ms", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.1f / %.1f", r.itl_ms.p50, r.itl_ms.p99);
         }));
  t->Row(p + "TPOT mean ms", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.1f", r.tpot_ms.mean);
         }));
  t->Row(p + "E2E p50 / p99 ms", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.0f / %.0f", r.e2e_ms.p50, r.e2e_ms.p99);
         }));
  t->Row(p + "completed / failed", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%d / %d", r.num_ok, r.num_failed);
         }));
}

void AddS2Rows(const std::vector<const BenchResult*>& rs, Table* t) {
  t->Row("stream ITL, no prefill: p50 / p99 / max ms",
         Cells(rs, [](const BenchResult& r) {
           const Percentiles& p = r.itl_base_ms;
           return StrFormat("%.1f / %.1f / %.1f", p.p50, p.p99, p.max);
         }));
  t->Row("stream ITL during prefill: p50 / p99 / max ms",
         Cells(rs, [](const BenchResult& r) {
           const Percentiles& p = r.itl_prefill_ms;
           return StrFormat("%.1f / %.1f / %.1f", p.p50, p.p99, p.max);
         }));
  t->Row("during-prefill p50 / no-prefill p50",
         Cells(rs, [](const BenchResult& r) {
           return r.itl_base_ms.p50 > 0
                      ? StrFormat("%.2fx", r.itl_prefill_ms.p50 / r.itl_base_ms.p50)
                      : std::string("-");
         }));
  t->Row("during-prefill max / no-prefill p50 (stall-free <= 2)",
         Cells(rs, [](const BenchResult& r) {
           return r.itl_base_ms.p50 > 0
                      ? StrFormat("%.2fx", r.itl_prefill_ms.max / r.itl_base_ms.p50)
                      : std::string("-");
         }));
  t->Row("long-prompt TTFT p50 / max ms", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.0f / %.0f", r.long_ttft_ms.p50,
                            r.long_ttft_ms.max);
         }));
  t->Row("gaps during / outside prefill", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%lld / %lld", (long long)r.num_prefill_gaps,
                            (long long)r.num_base_gaps);
         }));
  t->Row("output tok/s (all)", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%.1f", OutTokS(r));
         }));
  t->Row("completed / failed", Cells(rs, [](const BenchResult& r) {
           return StrFormat("%d / %d", r.num_ok, r.num_failed);
         }));
}

// Rows every workload table ends with: the engine's own view.
void AddEngineRows(const std::vector<const BenchResult*>& rs, Table* t) {
  t->Row("passes; mean execute / schedule ms",
         Cells(rs, [](const BenchResult& r) {
           const engine::EngineStats& l = r.loop;
           return StrFormat("%lld; %.1f / %.3f", (long long)l.num_passes,
                            l.Mean(l.execute_ms), l.Mean(l.schedule_ms));
         }));
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
  std::string model_path = WEFT_DEFAULT_MODEL, json_path, trace_path;
  std::string workload = "custom";
  int64_t num_requests = 16, prompt_len = 256, output_len = 128;
  int64_t per_client = 4;
  std::string concurrency = "1", rates = "0",
              chunks = std::to_string(defaults.prefill_chunk),
              mbts = std::to_string(defaults.max_batched_tokens),
              max_seqs = std::to_string(defaults.max_seqs);
  int64_t threads = 0, seed = 1, warmup = 1;
  int64_t s2_streams = 8, s2_long_prompt = 2048, s2_long_output = 16,
          s2_long_count = 3;
  double kv_gib = 1.0, s2_interval = 10.0;
  bool unchunked = true;
  flags.String("model", &model_path, "GGUF model file", 'm');
  flags.String("workload", &workload,
               "custom (the flags below), S1 (ladder) or S2 (stall test)");
  flags.Int("num-requests", &num_requests,
            "requests per configuration (S1: default "
            "--s1-requests-per-client * c)", 'n');
  flags.Int("s1-requests-per-client", &per_client,
            "S1: requests per unit of concurrency (n = this * c)");
  flags.Int("prompt-len", &prompt_len,
            "prompt tokens per request (S1 default 256, S2 streams 64)");
  flags.Int("output-len", &output_len,
            "output tokens per request, no EOS stop (S1 128, S2 streams 512)");
  flags.String("concurrency", &concurrency,
               "closed loop: requests in flight, e.g. 1,4 (with --rate: a "
               "cap, 0 = none; S1 default 1,4,8,16)");
  flags.String("rate", &rates, "open loop: Poisson arrivals per second, e.g. 0.5,1; 0 = closed loop");
  flags.String("prefill-chunk", &chunks, "prompt tokens per sequence per pass; 0 = no chunking");
  flags.String("max-batched-tokens", &mbts, "token budget of a pass");
  flags.String("max-seqs", &max_seqs, "running sequences at most");
  flags.Bool("unchunked", &unchunked,
             "S1/S2: add a column with chunking disabled (prefill_chunk 0, "
             "budget max(2048, longest prompt + max_seqs))");
  flags.Int("s2-streams", &s2_streams, "S2: decoding streams");
  flags.Int("s2-long-prompt", &s2_long_prompt, "S2: long prompt tokens");
  flags.Int("s2-long-output", &s2_long_output, "S2: long requests' output tokens");
  flags.Int("s2-long-count", &s2_long_count, "S2: long requests per run");
  flags.Double("s2-interval", &s2_interval,
               "S2: seconds between long arrivals (the first at 1x)");
  flags.Double("kv-gib", &kv_gib, "KV cache size in GiB (float32 K/V)");
  flags.Int("threads", &threads, "compute threads; 0 = all cores", 't');
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
  if (num_requests < 1 || num_requests > 100000) return usage("--num-requests must be in [1, 100000]");
  if (per_client < 1 || per_client > 10000) return usage("--s1-requests-per-client must be in [1, 10000]");
  if (prompt_len < 1 || prompt_len > 1000000) return usage("--prompt-len must be in [1, 1000000]");
  if (output_len < 1 || output_len > 1000000) return usage("--output-len must be in [1, 1000000]");
  if (threads < 0 || threads > 1024) return usage("--threads must be in [0, 1024]");
  if (warmup < 0 || warmup > 1000) return usage("--warmup must be in [0, 1000]");
  if (!(kv_gib > 0) || kv_gib > 4096) return usage("--kv-gib must be in (0, 4096]");
  if (s2_streams < 1 || s2_streams > 4096) return usage("--s2-streams must be in [1, 4096]");
  if (s2_long_prompt < 1 || s2_long_prompt > 1000000) return usage("--s2-long-prompt must be in [1, 1000000]");
  if (s2_long_output < 1 || s2_long_output > 1000000) return usage("--s2-long-output must be in [1, 1000000]");
  if (s2_long_count < 1 || s2_long_count > 1000) return usage("--s2-long-count must be in [1, 1000]");
  if (!(s2_interval >= 0) || s2_interval > 3600) return usage("--s2-interval must be in [0, 3600]");
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
        if (r == 0 && c < 1) return usage("closed loop needs --concurrency >= 1");
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
    const int64_t longest = s2 ? std::max(prompt_len, s2_long_prompt) : prompt_len;
    if (unchunked) {
      const int64_t seqs = *std::max_element(ss.begin(), ss.end());
      BenchPoint p;
      p.prefill_chunk = 0;
      p.max_seqs = seqs;
      p.max_batched_tokens = std::max<int64_t>(2048, longest + seqs);
      p.label = StrFormat("unchunked (budget %lld)",
                          (long long)p.max_batched_tokens);
      configs.push_back(p);
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
  const int64_t one_len =
      std::max(prompt_len + output_len,
               s2 ? s2_long_prompt + s2_long_output : int64_t{0});
  if (kv_blocks < (one_len + 15) / 16 + 1) {
    return usage(StrFormat("--kv-gib %.3g holds %lld blocks of 16 tokens; one "
                           "request needs %lld", kv_gib, (long long)kv_blocks,
                           (long long)((one_len + 15) / 16 + 1)));
  }
  std::string cmdline = "weft bench engine";
  for (int i = 1; i < argc; ++i) cmdline += std::string(" ") + argv[i];
  std::printf("## %s\n\nmodel %s (%s), KV %lld blocks x 16, threads %lld\n",
              cmdline.c_str(), model_path.c_str(),
              model.config().Summary().c_str(), (long long)kv_blocks,
              (long long)threads);
  const Workload warm = MakeWorkload(model.config(),
                                     static_cast<int>(warmup), 16, 4,
                                     static_cast<uint64_t>(seed) + 99);
  int traced_runs = 0;
  std::vector<BenchResult> results;
  // Warms up, runs one point, traces it; false after an engine error.
  auto run = [&](const Workload& w, const BenchPoint& p) -> bool {
    if (warmup > 0) {
      BenchPoint wp = p;
      wp.rate = 0;
      wp.concurrency = 1;
      (void)RunPoint(model, warm, wp, kv_blocks, static_cast<int>(threads),
                     static_cast<uint64_t>(seed), engine::EngineOptions());
    }
    engine::EngineOptions eo;
    eo.trace_path = trace_path;
    eo.trace_append = traced_runs++ > 0;
    StatusOr<BenchResult> r = RunPoint(model, w, p, kv_blocks,
                                       static_cast<int>(threads),
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
    const Workload work = MakeWorkload(
        model.config(), static_cast<int>(num_requests),
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
      for (size_t i = first; i < results.size(); ++i) row.push_back(&results[i]);
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
    Workload work = MakeWorkload(model.config(), static_cast<int>(s2_streams),
                                 static_cast<int>(prompt_len),
                                 static_cast<int>(output_len),
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
    std::fprintf(f,
                 "{\n  \"bench\": \"engine\",\n  \"workload\": \"%s\",\n"
                 "  \"command\": \"%s\",\n  \"model\": \"%s\",\n"
                 "  \"num_requests\": %lld, \"prompt_len\": %lld, "
                 "\"output_len\": %lld, \"kv_blocks\": %lld, \"threads\": %lld,\n"
                 "  \"runs\": [\n",
                 s1 ? "S1" : s2 ? "S2" : "custom",
                 CEscape(cmdline, 4096).c_str(),
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
