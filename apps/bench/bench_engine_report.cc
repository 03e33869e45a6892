// JSON, one-line and markdown-table output of `weft bench engine`.
#include "apps/bench/bench_engine_report.h"

#include "util/strings.h"

namespace weft::apps::bench_engine {
namespace {

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
      l.Mean(l.execute_ms), l.Mean(l.update_ms), l.Mean(l.emit_ms), l.trace_ms);
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

// One cell per column: f(result of that column).
template <typename F>
std::vector<std::string> Cells(const std::vector<const BenchResult*>& rs, F f) {
  std::vector<std::string> out;
  for (const BenchResult* r : rs) out.push_back(f(*r));
  return out;
}

double OutTokS(const BenchResult& r) {
  return r.duration_s > 0 ? r.output_tokens / r.duration_s : 0.0;
}

// "p50 / p99 / max" in ms.
std::string P50P99Max(const Percentiles& p) {
  return StrFormat("%.1f / %.1f / %.1f", p.p50, p.p99, p.max);
}

// "1.25x", or "-" without a denominator.
std::string Ratio(double num, double den) {
  return den > 0 ? StrFormat("%.2fx", num / den) : std::string("-");
}

}  // namespace

std::string ResultJson(const BenchResult& r) {
  const BenchPoint& p = r.point;
  return StrFormat(
      "    {\"concurrency\": %lld, \"rate\": %g, \"prefill_chunk\": %lld, "
      "\"max_batched_tokens\": %lld, \"max_seqs\": %lld, \"target_itl_ms\": %s, \"target_itl_ratio\": %s,\n"
      "     \"completed\": %d, \"failed\": %d, \"duration_s\": %.4f, "
      "\"prompt_tokens\": %lld, \"output_tokens\": %lld,\n"
      "     \"output_tok_s\": %.3f, \"total_tok_s\": %.3f, "
      "\"num_steps\": %lld, \"num_preemptions\": %lld,\n"
      "     \"ttft_ms\": %s,\n     \"itl_ms\": %s,\n     \"e2e_ms\": %s%s}",
      (long long)p.concurrency, p.rate, (long long)p.prefill_chunk,
      (long long)p.max_batched_tokens, (long long)p.max_seqs,
      p.target_itl_ms > 0 ? StrFormat("%g", p.target_itl_ms).c_str() : "null",
      p.target_itl_ratio > 0 ? StrFormat("%g", p.target_itl_ratio).c_str() : "null", r.num_ok,
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
      r.ttft_ms.p50, r.ttft_ms.p90, r.ttft_ms.p99, r.ttft_ms.max, r.itl_ms.p50,
      r.itl_ms.p90, r.itl_ms.p99, r.itl_ms.max, r.e2e_ms.p50, r.e2e_ms.p90,
      r.e2e_ms.p99, r.e2e_ms.max);
  std::fflush(stdout);
}

void AddS1Rows(int64_t c, const std::vector<const BenchResult*>& rs, Table* t) {
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
         Cells(rs, [](const BenchResult& r) { return P50P99Max(r.itl_base_ms); }));
  t->Row("stream ITL during prefill: p50 / p99 / max ms",
         Cells(rs, [](const BenchResult& r) { return P50P99Max(r.itl_prefill_ms); }));
  t->Row("during-prefill p50 / no-prefill p50",
         Cells(rs, [](const BenchResult& r) {
           return Ratio(r.itl_prefill_ms.p50, r.itl_base_ms.p50);
         }));
  t->Row("during-prefill max / no-prefill p50 (stall-free <= 2)",
         Cells(rs, [](const BenchResult& r) {
           return Ratio(r.itl_prefill_ms.max, r.itl_base_ms.p50);
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

void AddEngineRows(const std::vector<const BenchResult*>& rs, Table* t) {
  t->Row("passes; mean execute / schedule ms",
         Cells(rs, [](const BenchResult& r) {
           const engine::EngineStats& l = r.loop;
           return StrFormat("%lld; %.1f / %.3f", (long long)l.num_passes,
                            l.Mean(l.execute_ms), l.Mean(l.schedule_ms));
         }));
}

}  // namespace weft::apps::bench_engine
