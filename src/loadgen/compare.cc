#include "loadgen/compare.h"

#include "loadgen/report.h"
#include "util/strings.h"

namespace weft::loadgen {

using json = nlohmann::json;

Status ValidateResult(const json& doc) {
  if (!doc.is_object() || doc.value("format", "") != "weft-bench-serve") {
    return InvalidArgumentError("not a weft bench serve result (no \"format\": \"weft-bench-serve\")");
  }
  if (!doc.contains("levels") || !doc["levels"].is_array()) {
    return InvalidArgumentError("the result has no levels");
  }
  for (const json& l : doc["levels"]) {
    if (!l.is_object() || !l.contains("summary") || !l["summary"].is_object()) {
      return InvalidArgumentError("a level has no summary");
    }
  }
  return OkStatus();
}

namespace {

struct Metric {
  const char* label;
  const char* key;
  const char* stat;     // nullptr: a plain number
  bool higher_better;
};

constexpr Metric kMetrics[] = {
    {"output tok/s", "output_throughput", nullptr, true},
    {"requests/s", "request_throughput", nullptr, true},
    {"goodput req/s", "goodput", nullptr, true},
    {"SLO attainment", "slo_attainment", nullptr, true},
    {"TTFT p50 ms", "ttft_ms", "p50", false},
    {"TTFT p99 ms", "ttft_ms", "p99", false},
    {"ITL p50 ms", "itl_ms", "p50", false},
    {"ITL p99 ms", "itl_ms", "p99", false},
    {"TPOT mean ms", "tpot_ms", "mean", false},
    {"E2E p50 ms", "e2e_ms", "p50", false},
    {"E2E p99 ms", "e2e_ms", "p99", false},
};

const json* Find(const json& s, const Metric& m) {
  auto it = s.find(m.key);
  if (it == s.end()) return nullptr;
  if (m.stat) {
    if (!it->is_object()) return nullptr;
    auto st = it->find(m.stat);
    return st == it->end() ? nullptr : &*st;
  }
  return &*it;
}

}  // namespace

StatusOr<std::string> CompareReport(const json& a, const json& b,
                                    const std::string& name_a,
                                    const std::string& name_b) {
  RETURN_IF_ERROR(ValidateResult(a));
  RETURN_IF_ERROR(ValidateResult(b));
  std::string out = "# weft bench compare\n\n";
  out += StrFormat("- A: %s (`%s`)\n- B: %s (`%s`)\n\n", name_a.c_str(),
                   a["metadata"].value("command_line", "").c_str(),
                   name_b.c_str(),
                   b["metadata"].value("command_line", "").c_str());
  if (!a.value("valid", true) || !b.value("valid", true)) {
    out += "**Warning**: at least one run is INVALID (token count mismatches).\n\n";
  }
  out += "Ratio is B/A; for latencies < 1 means B is faster, for throughput > 1.\n\n";
  out += StrFormat("| level | metric | A: %s | B: %s | B/A |\n|---|---|---:|---:|---:|\n",
                   name_a.c_str(), name_b.c_str());
  int rows = 0;
  for (const json& la : a["levels"]) {
    const std::string name = LevelName(la);
    const json* lb = nullptr;
    for (const json& l : b["levels"]) {
      if (LevelName(l) == name) lb = &l;
    }
    if (!lb) continue;
    const json& sa = la["summary"];
    const json& sb = (*lb)["summary"];
    for (const Metric& m : kMetrics) {
      const json* va = Find(sa, m);
      const json* vb = Find(sb, m);
      if (!va || !vb || !va->is_number() || !vb->is_number()) continue;
      const double x = va->get<double>(), y = vb->get<double>();
      std::string ratio = x != 0 ? StrFormat("%.3f", y / x) : "n/a";
      out += StrFormat("| %s | %s | %.2f | %.2f | %s |\n", name.c_str(),
                       m.label, x, y, ratio.c_str());
      ++rows;
    }
  }
  if (rows == 0) {
    return InvalidArgumentError("the two results have no level in common");
  }
  // Capacity: the highest rate that kept the attainment (runs with rates
  // and an SLO).
  auto max_rate = [](const json& d) -> const json* {
    if (!d.contains("capacity") || !d["capacity"].is_object()) return nullptr;
    const json& r = d["capacity"]["max_rate"];
    return r.is_number() ? &r : nullptr;
  };
  if (const json *ra = max_rate(a), *rb = max_rate(b); ra && rb) {
    const double x = ra->get<double>(), y = rb->get<double>();
    out += StrFormat("| all | max rate, %.0f%% in SLO | %.3f | %.3f | %s |\n",
                     100 * kCapacityAttainment, x, y,
                     x != 0 ? StrFormat("%.3f", y / x).c_str() : "n/a");
  }
  return out;
}

}  // namespace weft::loadgen
