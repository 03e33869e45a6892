// Workloads and one measured engine run for `weft bench engine`.
#include "apps/bench/bench_engine_run.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <utility>

#include "engine/model_executor.h"

namespace weft::apps::bench_engine {

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

namespace {

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

}  // namespace

namespace {

// The engine of one point: its scheduler limits, a KV cache of kv_blocks
// blocks of 16 tokens, `threads` compute threads.
StatusOr<std::unique_ptr<engine::Engine>> MakeEngine(const model::Model& model,
                                                     const Workload& w, const BenchPoint& pt,
                                                     int64_t kv_blocks, int threads,
                                                     const engine::EngineOptions& eo) {
  engine::SchedulerConfig sc;
  sc.max_batched_tokens = static_cast<int>(pt.max_batched_tokens);
  sc.max_seqs = static_cast<int>(pt.max_seqs);
  sc.prefill_chunk = static_cast<int>(pt.prefill_chunk);
  sc.target_itl_ms = pt.target_itl_ms;
  sc.target_itl_ratio = pt.target_itl_ratio;
  sc.min_prefill_tokens = static_cast<int>(pt.min_prefill_tokens);
  sc.max_model_len = w.MaxLen() + 8;
  sc.max_queue = std::max<int>(1024, static_cast<int>(w.prompts.size()) + 1);
  kv::KvCacheConfig kc;
  kc.num_blocks = static_cast<int>(kv_blocks);
  kc.block_size = 16;
  engine::ModelExecutorConfig ec;
  ec.num_threads = threads;
  ASSIGN_OR_RETURN(auto exec, engine::CreateModelExecutor(&model, kc, ec));
  return engine::Engine::Create(sc, kc, std::move(exec), eo);
}

// Submits a workload's requests and records each one's token times.
// Thread-safe: the engine's callbacks run on its loop thread while the
// caller submits and waits.
class RequestTracker {
 public:
  RequestTracker(engine::Engine* eng, const Workload& w)
      : eng_(eng), w_(w), timing_(w.prompts.size()) {}

  // Submits request i (greedy, the workload's output length).
  Status Submit(int i) {
    engine::RequestSpec spec;
    spec.id = i;
    spec.prompt = w_.prompts[static_cast<size_t>(i)];
    spec.stop.max_tokens = w_.OutputLen(static_cast<size_t>(i));
    spec.sampling.temperature = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      timing_[static_cast<size_t>(i)].submit = Clock::now();
      ++in_flight_;
    }
    Status st = eng_->Submit(std::move(spec),
                             [this, i](const engine::RequestEvent& ev) { OnEvent(i, ev); });
    if (!st.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      --in_flight_;
      ++done_;
      timing_[static_cast<size_t>(i)].failed = true;
      cv_.notify_all();
    }
    return st;
  }

  // Blocks until fewer than `cap` requests are in flight.
  void WaitBelow(int cap) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return in_flight_ < cap; });
  }
  // Blocks until n requests are done.
  void WaitDone(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return done_ == n; });
  }
  // REQUIRES: every request is done.
  const std::vector<Timing>& timing() const { return timing_; }

 private:
  void OnEvent(int i, const engine::RequestEvent& ev) {
    const Clock::time_point now = Clock::now();
    std::lock_guard<std::mutex> lock(mu_);
    Timing& t = timing_[static_cast<size_t>(i)];
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
      --in_flight_;
      ++done_;
      cv_.notify_all();
    }
  }

  engine::Engine* const eng_;
  const Workload& w_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Timing> timing_;  // guarded by mu_
  int in_flight_ = 0;           // guarded by mu_
  int done_ = 0;                // guarded by mu_
};

// The latency percentiles and token counts of the finished requests.
void SummarizeRequests(const Workload& w, const std::vector<Timing>& timing, BenchResult* r) {
  std::vector<double> ttft, itl, e2e, tpot;
  for (size_t i = 0; i < timing.size(); ++i) {
    const Timing& t = timing[i];
    if (t.failed || !t.finished) {
      ++r->num_failed;
      continue;
    }
    ++r->num_ok;
    r->prompt_tokens += static_cast<int64_t>(w.prompts[i].size());
    r->output_tokens += t.tokens;
    if (t.tokens > 0) ttft.push_back(Ms(t.submit, t.first));
    if (t.tokens > 1) {
      tpot.push_back((Ms(t.submit, t.done) - Ms(t.submit, t.first)) / (t.tokens - 1));
    }
    itl.insert(itl.end(), t.itl_ms.begin(), t.itl_ms.end());
    e2e.push_back(Ms(t.submit, t.done));
  }
  r->ttft_ms = Summarize(std::move(ttft));
  r->itl_ms = Summarize(std::move(itl));
  r->e2e_ms = Summarize(std::move(e2e));
  r->tpot_ms = Summarize(std::move(tpot));
}

}  // namespace

StatusOr<BenchResult> RunPoint(const model::Model& model, const Workload& w,
                               const BenchPoint& pt, int64_t kv_blocks,
                               int threads, uint64_t seed,
                               const engine::EngineOptions& eo) {
  ASSIGN_OR_RETURN(std::unique_ptr<engine::Engine> eng,
                   MakeEngine(model, w, pt, kv_blocks, threads, eo));
  const int n = static_cast<int>(w.prompts.size());
  RequestTracker tracker(eng.get(), w);
  std::mt19937_64 rng(seed ^ 0x5bd1e995);
  std::exponential_distribution<double> gap(pt.rate > 0 ? pt.rate : 1.0);
  const bool scheduled = !w.arrival_s.empty();
  const int cap = pt.concurrency > 0 && !scheduled ? static_cast<int>(pt.concurrency) : n;
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
    tracker.WaitBelow(cap);
    Status st = tracker.Submit(i);
    if (!st.ok()) {
      std::fprintf(stderr, "weft bench engine: request %d: %s\n", i, st.ToString().c_str());
    }
  }
  tracker.WaitDone(n);
  const Clock::time_point end = Clock::now();
  eng->WaitUntilIdle();

  BenchResult r;
  r.point = pt;
  r.duration_s = Ms(start, end) / 1000.0;
  r.stats = eng->stats();
  r.loop = eng->loop_stats();
  SummarizeRequests(w, tracker.timing(), &r);
  if (!w.is_long.empty()) SummarizeS2(w, tracker.timing(), &r);
  return r;
}

std::string AddTimedConfigs(const std::vector<double>& targets_ms,
                            const std::vector<double>& ratios, int64_t min_prefill,
                            std::vector<BenchPoint>* configs) {
  if (min_prefill < 0 || min_prefill > (1 << 20)) return "--min-prefill-tokens out of range";
  BenchPoint first = configs->front();
  first.min_prefill_tokens = min_prefill;
  for (double t : targets_ms) {
    if (!(t > 0)) return "--target-itl-ms values must be > 0";
    BenchPoint p = first;
    p.target_itl_ms = t;
    p.label = StrFormat("target %g ms", t);
    configs->push_back(p);
  }
  for (double r : ratios) {
    if (!(r >= 1)) return "--target-itl-ratio values must be >= 1";
    BenchPoint p = first;
    p.target_itl_ratio = r;
    p.label = StrFormat("target %gx decode", r);
    configs->push_back(p);
  }
  return "";
}

}  // namespace weft::apps::bench_engine
