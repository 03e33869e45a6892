// The reporting half of `weft bench engine`: one JSON object per run, a
// one-line summary, and the side-by-side markdown tables of the S1/S2
// workloads (one column per scheduler configuration).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "apps/bench/bench_engine_run.h"

namespace weft::apps::bench_engine {

// The run as one JSON object (indented for the --json file's list).
std::string ResultJson(const BenchResult& r);
// One line per run on stdout (sweeps).
void PrintRow(const BenchResult& r);

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

// The S1 rows of concurrency c, one cell per configuration.
void AddS1Rows(int64_t c, const std::vector<const BenchResult*>& rs, Table* t);
// The S2 rows: stream ITL with and without a long prefill, long TTFT.
void AddS2Rows(const std::vector<const BenchResult*>& rs, Table* t);
// Rows every workload table ends with: the engine's own view.
void AddEngineRows(const std::vector<const BenchResult*>& rs, Table* t);

}  // namespace weft::apps::bench_engine
