// `weft bench VERB ...`: dispatches to the verbs registered with
// WEFT_BENCH_VERB (apps/bench/bench.h).
#include "apps/bench/bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "apps/command.h"

namespace weft::apps {
namespace {

std::vector<BenchVerb>& Verbs() {
  static std::vector<BenchVerb> verbs;
  return verbs;
}

void PrintBenchHelp(FILE* f) {
  std::fprintf(f, "usage: weft bench VERB [ARGS...]   (weft bench VERB --help)\n\nverbs:\n");
  for (const BenchVerb& v : AllBenchVerbs()) {
    std::fprintf(f, "  %-10s %s\n", v.name, v.summary);
  }
}

int RunBench(int argc, char** argv) {
  if (argc < 2) {
    PrintBenchHelp(stderr);
    return 2;
  }
  if (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintBenchHelp(stdout);
    return 0;
  }
  for (const BenchVerb& v : AllBenchVerbs()) {
    if (std::strcmp(argv[1], v.name) == 0) return v.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "weft bench: unknown verb '%s' (weft bench --help lists them)\n",
               argv[1]);
  return 2;
}

}  // namespace

BenchVerbRegistrar::BenchVerbRegistrar(const char* name, const char* summary,
                                       int (*run)(int, char**)) {
  Verbs().push_back({name, summary, run});
}

std::vector<BenchVerb> AllBenchVerbs() {
  std::vector<BenchVerb> all = Verbs();
  std::sort(all.begin(), all.end(), [](const BenchVerb& a, const BenchVerb& b) {
    return std::strcmp(a.name, b.name) < 0;
  });
  return all;
}

WEFT_COMMAND("bench", "benchmarks: serve (a server), plot, compare", RunBench);

}  // namespace weft::apps
