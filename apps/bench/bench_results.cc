// `weft bench plot|compare`: SVG plots and B/A ratio tables of `weft bench
// serve` result files (apps/bench/bench_serve.cc writes them).
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/flags.h"
#include "loadgen/compare.h"
#include "loadgen/plot.h"
#include "util/file.h"
#include "util/status.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using json = nlohmann::json;
using namespace weft::loadgen;  // NOLINT: one file of glue

StatusOr<json> ReadResult(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgumentError(path + ": not JSON");
  Status st = ValidateResult(j);
  if (!st.ok()) return InvalidArgumentError(path + ": " + st.message());
  return j;
}

std::string LabelOf(const json& doc, const std::string& path) {
  std::string label = doc["metadata"].value("label", "");
  if (!label.empty()) return label;
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.size() > 5 && base.substr(base.size() - 5) == ".json") base.resize(base.size() - 5);
  return base;
}

int RunBenchPlot(int argc, char** argv) {
  FlagSet flags("weft bench plot RESULT.json... -o FILE.svg",
                "Plot TTFT and ITL CDFs and throughput (or goodput) curves of "
                "one or more `weft bench serve` results into one SVG.");
  std::string out_path, labels;
  flags.String("out", &out_path, "SVG file to write", 'o');
  flags.String("labels", &labels, "comma-separated legend names (default: labels or file names)");
  std::vector<std::string> files;
  if (int rc; !flags.Parse(argc, argv, &files, &rc)) return rc;
  if (files.empty()) return UsageError("plot needs at least one RESULT.json");
  if (out_path.empty()) return UsageError("plot needs -o FILE.svg");
  std::vector<std::string_view> names = StrSplit(labels, ',');
  std::vector<PlotRun> runs;
  for (size_t i = 0; i < files.size(); ++i) {
    StatusOr<json> doc = ReadResult(files[i]);
    if (!doc.ok()) return UsageError(doc.status().message());
    std::string name = !labels.empty() && i < names.size() ? std::string(names[i])
                                                           : LabelOf(*doc, files[i]);
    runs.push_back({name, std::move(*doc)});
  }
  StatusOr<std::string> svg = PlotSvg(runs);
  if (!svg.ok()) return UsageError(svg.status().message());
  std::ofstream f(out_path);
  f << *svg;
  if (!f) {
    std::fprintf(stderr, "weft bench: cannot write %s\n", out_path.c_str());
    return 1;
  }
  return 0;
}

int RunBenchCompare(int argc, char** argv) {
  FlagSet flags("weft bench compare A.json B.json",
                "Ratios B/A of the headline metrics of two `weft bench serve` "
                "results, per level present in both, as a markdown table.");
  std::vector<std::string> files;
  if (int rc; !flags.Parse(argc, argv, &files, &rc)) return rc;
  if (files.size() != 2) return UsageError("compare needs exactly two result files");
  StatusOr<json> a = ReadResult(files[0]);
  if (!a.ok()) return UsageError(a.status().message());
  StatusOr<json> b = ReadResult(files[1]);
  if (!b.ok()) return UsageError(b.status().message());
  StatusOr<std::string> table = CompareReport(*a, *b, LabelOf(*a, files[0]), LabelOf(*b, files[1]));
  if (!table.ok()) return UsageError(table.status().message());
  std::cout << *table;
  return 0;
}

}  // namespace

WEFT_BENCH_VERB("plot", "SVG of latency CDFs and throughput curves", RunBenchPlot);
WEFT_BENCH_VERB("compare", "B/A ratios of two serve results", RunBenchCompare);

}  // namespace weft::apps
