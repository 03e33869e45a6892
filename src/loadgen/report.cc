#include "loadgen/report.h"

#include <algorithm>

#include "util/strings.h"

namespace weft::loadgen {

using json = nlohmann::json;

namespace {

std::vector<double> Ms(const std::vector<double>& s) {
  std::vector<double> out;
  out.reserve(s.size());
  for (double v : s) out.push_back(v * 1000.0);
  return out;
}

std::string FailureName(const RequestResult& r) {
  if (r.failure == FailureKind::kHttpStatus) {
    return StrFormat("http_%d", r.http_status);
  }
  return FailureKindName(r.failure);
}

}  // namespace

StallSummary SummarizeStall(const std::vector<RequestResult>& requests) {
  StallSummary s;
  std::vector<std::pair<double, double>> windows;  // prefill [from, to]
  std::vector<double> long_ttft;
  for (const RequestResult& r : requests) {
    if (r.group != "long") continue;
    s.long_requests++;
    const double end = r.ttft >= 0 ? r.sent_at + r.ttft : r.sent_at + r.e2e;
    windows.emplace_back(r.sent_at, end);
    if (r.ok() && r.ttft >= 0) long_ttft.push_back(r.ttft);
  }
  std::vector<double> all, during;
  for (const RequestResult& r : requests) {
    if (r.group != "background") continue;
    for (size_t i = 1; i < r.chunk_at.size(); ++i) {
      const double a = r.chunk_at[i - 1], b = r.chunk_at[i];
      const int64_t k = r.chunk_tokens[i];
      const double gap = (b - a) / static_cast<double>(k);
      bool overlaps = false;
      for (const auto& [from, to] : windows) {
        if (a < to && b > from) overlaps = true;
      }
      for (int64_t t = 0; t < k; ++t) {
        all.push_back(gap);
        if (overlaps) during.push_back(gap);
      }
    }
  }
  s.itl_all_ms = Summarize(Ms(all));
  s.itl_prefill_ms = Summarize(Ms(during));
  s.long_ttft_ms = Summarize(Ms(long_ttft));
  if (!during.empty()) {
    s.stall_free = s.itl_prefill_ms.max <= 2.0 * s.itl_all_ms.p50;
  }
  return s;
}

LevelSummary SummarizeLevel(const LevelResult& level, const Slo& slo,
                            bool check_tokens) {
  LevelSummary s;
  s.mode = level.mode;
  s.concurrency = level.concurrency;
  s.rate = level.rate;
  s.duration_s = level.duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  int64_t met = 0;
  for (const RequestResult& r : level.requests) {
    s.requests++;
    if (!r.ok()) {
      s.failed++;
      s.failures[FailureName(r)]++;
      continue;
    }
    s.completed++;
    s.output_tokens += r.output_tokens;
    s.prompt_tokens += r.prompt_tokens >= 0 ? r.prompt_tokens : r.prompt_tokens_planned;
    ttft.push_back(r.ttft);
    e2e.push_back(r.e2e);
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    std::optional<double> t = r.tpot();
    if (t) tpot.push_back(*t);
    if (!r.usage_seen) s.usage_missing++;
    if (check_tokens && r.output_tokens != r.max_tokens) s.token_mismatches++;
    if (r.prompt_tokens >= 0 && r.prompt_tokens_planned > 0 &&
        r.prompt_tokens != r.prompt_tokens_planned) {
      s.prompt_mismatches++;
    }
    if (MeetsSlo(slo, r.ttft, t, r.e2e)) met++;
  }
  s.valid = s.token_mismatches == 0;
  s.ttft_ms = Summarize(Ms(ttft));
  s.tpot_ms = Summarize(Ms(tpot));
  s.itl_ms = Summarize(Ms(itl));
  s.e2e_ms = Summarize(Ms(e2e));
  if (s.duration_s > 0) {
    s.request_throughput = static_cast<double>(s.completed) / s.duration_s;
    s.output_throughput = static_cast<double>(s.output_tokens) / s.duration_s;
    s.total_token_throughput =
        static_cast<double>(s.output_tokens + s.prompt_tokens) / s.duration_s;
  }
  if (slo.any()) {
    s.goodput = s.duration_s > 0 ? static_cast<double>(met) / s.duration_s : 0;
    s.slo_attainment = s.requests > 0 ? static_cast<double>(met) / static_cast<double>(s.requests) : 0;
  }
  if (level.mode == "stall") s.stall = SummarizeStall(level.requests);
  return s;
}

json DistributionJson(const Distribution& d) {
  return {{"count", d.count}, {"mean", d.mean}, {"min", d.min}, {"p50", d.p50},
          {"p90", d.p90},     {"p99", d.p99},   {"max", d.max}};
}

json SummaryJson(const LevelSummary& s) {
  json j = {{"requests", s.requests},
            {"completed", s.completed},
            {"failed", s.failed},
            {"failures", s.failures},
            {"duration_s", s.duration_s},
            {"request_throughput", s.request_throughput},
            {"output_throughput", s.output_throughput},
            {"total_token_throughput", s.total_token_throughput},
            {"output_tokens", s.output_tokens},
            {"prompt_tokens", s.prompt_tokens},
            {"ttft_ms", DistributionJson(s.ttft_ms)},
            {"tpot_ms", DistributionJson(s.tpot_ms)},
            {"itl_ms", DistributionJson(s.itl_ms)},
            {"e2e_ms", DistributionJson(s.e2e_ms)},
            {"token_mismatches", s.token_mismatches},
            {"usage_missing", s.usage_missing},
            {"prompt_mismatches", s.prompt_mismatches},
            {"valid", s.valid},
            {"goodput", s.goodput ? json(*s.goodput) : json(nullptr)},
            {"slo_attainment",
             s.slo_attainment ? json(*s.slo_attainment) : json(nullptr)}};
  if (s.stall) {
    j["stall"] = {
        {"itl_all_ms", DistributionJson(s.stall->itl_all_ms)},
        {"itl_during_prefill_ms", DistributionJson(s.stall->itl_prefill_ms)},
        {"long_ttft_ms", DistributionJson(s.stall->long_ttft_ms)},
        {"long_requests", s.stall->long_requests},
        {"stall_free",
         s.stall->stall_free ? json(*s.stall->stall_free) : json(nullptr)}};
  }
  return j;
}

json SampleJson(const RequestResult& r) {
  json j = {{"index", r.index},
            {"group", r.group},
            {"ok", r.ok()},
            {"sent_at_s", r.sent_at},
            {"ttft_s", r.ttft >= 0 ? json(r.ttft) : json(nullptr)},
            {"e2e_s", r.e2e},
            {"output_tokens", r.output_tokens},
            {"max_tokens", r.max_tokens},
            {"prompt_tokens", r.prompt_tokens >= 0 ? json(r.prompt_tokens) : json(nullptr)},
            {"prompt_tokens_planned", r.prompt_tokens_planned},
            {"usage_seen", r.usage_seen},
            {"finish_reason", r.finish_reason},
            {"itl_s", r.itl}};
  if (r.scheduled_at >= 0) j["scheduled_at_s"] = r.scheduled_at;
  if (!r.ok()) {
    j["failure"] = FailureName(r);
    j["http_status"] = r.http_status;
    j["error"] = r.error;
  }
  std::optional<double> t = r.tpot();
  j["tpot_s"] = t ? json(*t) : json(nullptr);
  return j;
}

json CapacityJson(const json& levels, const Slo& slo) {
  if (!slo.any()) return nullptr;
  std::optional<double> rate, goodput;
  bool any_open = false;
  for (const json& l : levels) {
    if (l.value("mode", "") != "open") continue;
    any_open = true;
    const json& s = l["summary"];
    if (!s["slo_attainment"].is_number() ||
        s["slo_attainment"].get<double>() < kCapacityAttainment) {
      continue;
    }
    const double r = l.value("rate", 0.0);
    if (!rate || r > *rate) {
      rate = r;
      goodput = s["goodput"].is_number() ? s["goodput"].get<double>() : 0.0;
    }
  }
  if (!any_open) return nullptr;
  return {{"attainment", kCapacityAttainment},
          {"max_rate", rate ? json(*rate) : json(nullptr)},
          {"goodput_at_max_rate", goodput ? json(*goodput) : json(nullptr)}};
}

json ResultJson(const RunMetadata& meta, const RunResult& run, const Slo& slo,
                bool check_tokens) {
  json doc;
  doc["format"] = "weft-bench-serve";
  doc["version"] = 1;
  doc["metadata"] = {{"command_line", meta.command_line},
                     {"time_utc", meta.time_utc},
                     {"url", meta.url},
                     {"model", meta.model},
                     {"label", meta.label},
                     {"client_version", meta.weft_version},
                     {"workload", meta.workload},
                     {"config", meta.config},
                     {"server", meta.server}};
  doc["slo"] = {{"ttft_ms", slo.ttft_ms ? json(*slo.ttft_ms) : json(nullptr)},
                {"tpot_ms", slo.tpot_ms ? json(*slo.tpot_ms) : json(nullptr)},
                {"e2e_ms", slo.e2e_ms ? json(*slo.e2e_ms) : json(nullptr)}};
  bool valid = true;
  json levels = json::array();
  for (const LevelResult& l : run.levels) {
    LevelSummary s = SummarizeLevel(l, slo, check_tokens);
    valid = valid && s.valid;
    json samples = json::array();
    for (const RequestResult& r : l.requests) samples.push_back(SampleJson(r));
    levels.push_back({{"mode", l.mode},
                      {"concurrency", l.concurrency},
                      {"rate", l.rate},
                      {"started_at_s", l.started_at},
                      {"summary", SummaryJson(s)},
                      {"samples", std::move(samples)}});
  }
  doc["valid"] = valid;
  doc["capacity"] = CapacityJson(levels, slo);
  doc["warmup"] = {{"duration_s", run.warmup_s},
                   {"failures", run.warmup_failures}};
  doc["levels"] = std::move(levels);
  return doc;
}

std::string LevelName(const json& level) {
  const std::string mode = level.value("mode", "");
  if (mode == "open") return StrFormat("rate=%g/s", level.value("rate", 0.0));
  if (mode == "stall") {
    return StrFormat("S2 c=%lld", (long long)level.value("concurrency", 0));
  }
  return StrFormat("c=%lld", (long long)level.value("concurrency", 0));
}

namespace {

double Num(const json& j, const char* a, const char* b = nullptr) {
  const json* v = &j;
  for (const char* k : {a, b}) {
    if (!k) break;
    if (!v->is_object() || !v->contains(k)) return 0;
    v = &(*v)[k];
  }
  return v->is_number() ? v->get<double>() : 0;
}

// The report's title and the run's metadata (command, server, workload).
std::string MarkdownMetadata(const json& m) {
  std::string out = "# weft bench serve\n\n";
  out += '`';
  out += m.value("command_line", "");
  out += "`\n\n";
  out += StrFormat("- time: %s\n- url: %s\n- model: %s\n- client: %s\n",
                   m.value("time_utc", "").c_str(), m.value("url", "").c_str(),
                   m.value("model", "").c_str(),
                   m.value("client_version", "").c_str());
  if (m.contains("server") && m["server"].is_object()) {
    const json& sv = m["server"];
    const json srv = sv.value("server", json::object());
    const json mod = sv.value("model", json::object());
    auto str = [](const json& o, const char* k) {
      return o.is_object() && o.contains(k) && o[k].is_string() ? o[k].get<std::string>() : std::string("?");
    };
    out += StrFormat("- server: weft %s (%s); model file %s, sha256 %s\n",
                     str(srv, "version").c_str(), str(srv, "build_commit").c_str(),
                     str(mod, "path").c_str(), str(mod, "sha256").c_str());
  }
  out += "- workload: `";
  out += m.value("workload", json::object()).dump();
  out += "`\n";
  return out;
}

}  // namespace

std::string MarkdownReport(const json& doc) {
  std::string out = MarkdownMetadata(doc["metadata"]);
  const json& slo = doc["slo"];
  const bool has_slo = !slo["ttft_ms"].is_null() || !slo["tpot_ms"].is_null() ||
                       !slo["e2e_ms"].is_null();
  if (has_slo) {
    out += "- SLO: `";
    out += slo.dump();
    out += "`\n";
  }
  if (doc.contains("capacity") && doc["capacity"].is_object()) {
    const json& c = doc["capacity"];
    out += c["max_rate"].is_number()
               ? StrFormat("- capacity: the highest offered rate with %.0f%% of requests in "
                           "SLO is %g req/s (goodput %.3f req/s)\n",
                           100 * Num(c, "attainment"), Num(c, "max_rate"),
                           Num(c, "goodput_at_max_rate"))
               : StrFormat("- capacity: no offered rate kept %.0f%% of requests in SLO\n",
                           100 * Num(c, "attainment"));
  }
  if (!doc.value("valid", true)) {
    out += "\n**INVALID RUN**: some requests returned completion_tokens != "
           "max_tokens although ignore_eos was set.\n";
  }
  out += "\nLatencies in ms; throughput per second of the level's wall time.\n\n";
  out += "| level | ok | fail | req/s | out tok/s | TTFT p50 | TTFT p99 | "
         "ITL p50 | ITL p99 | TPOT mean | E2E p50 | E2E p99 |";
  out += has_slo ? " goodput | valid |\n" : " valid |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|";
  out += has_slo ? "---:|---|\n" : "---|\n";
  std::string failures, stalls;
  for (const json& l : doc["levels"]) {
    const json& s = l["summary"];
    out += StrFormat(
        "| %s | %lld | %lld | %.3f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | "
        "%.1f | %.1f |",
        LevelName(l).c_str(), (long long)s.value("completed", 0),
        (long long)s.value("failed", 0), Num(s, "request_throughput"),
        Num(s, "output_throughput"), Num(s, "ttft_ms", "p50"),
        Num(s, "ttft_ms", "p99"), Num(s, "itl_ms", "p50"),
        Num(s, "itl_ms", "p99"), Num(s, "tpot_ms", "mean"),
        Num(s, "e2e_ms", "p50"), Num(s, "e2e_ms", "p99"));
    if (has_slo) {
      out += StrFormat(" %.3f (%.0f%%) |", Num(s, "goodput"),
                       100 * Num(s, "slo_attainment"));
    }
    out += s.value("valid", true) ? " yes |\n"
                                  : StrFormat(" NO (%lld mismatched) |\n",
                                              (long long)s.value("token_mismatches", 0));
    if (s.value("failed", 0) > 0) {
      failures += StrFormat("- %s: %s\n", LevelName(l).c_str(),
                            s["failures"].dump().c_str());
    }
    if (s.contains("stall")) {
      const json& st = s["stall"];
      const json& sf = st["stall_free"];
      stalls += StrFormat(
          "| %s | %lld | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %s |\n",
          LevelName(l).c_str(), (long long)st.value("long_requests", 0),
          Num(st, "long_ttft_ms", "p50"), Num(st, "long_ttft_ms", "max"),
          Num(st, "itl_all_ms", "p50"), Num(st, "itl_during_prefill_ms", "p50"),
          Num(st, "itl_during_prefill_ms", "p99"),
          Num(st, "itl_during_prefill_ms", "max"),
          sf.is_null() ? "n/a (no overlap)" : (sf.get<bool>() ? "yes" : "NO"));
    }
  }
  if (!stalls.empty()) {
    out += "\nStall test (background streams while a long prompt is prefilled):\n\n"
           "| level | long reqs | long TTFT p50 | long TTFT max | bg ITL p50 (all) "
           "| bg ITL p50 (prefill) | p99 (prefill) | max (prefill) | stall-free |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
    out += stalls;
  }
  if (!failures.empty()) {
    out += "\nFailures by kind:\n\n";
    out += failures;
  }
  return out;
}

}  // namespace weft::loadgen
