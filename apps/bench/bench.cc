// `weft bench VERB ...`: dispatches to the verbs registered with
// WEFT_BENCH_VERB (apps/bench/bench.h).
#include "apps/bench/bench.h"

#include <algorithm>
#include <cstdio>

#include "apps/command.h"

namespace weft::apps {
namespace {

void PrintBenchHelp(FILE* f) {
  std::fprintf(f, "usage: weft bench VERB [ARGS...]   (weft bench VERB --help)\n\nverbs:\n");
  for (const Command& v : AllBenchVerbs()) {
    std::fprintf(f, "  %-10s %s\n", v.name, v.summary);
  }
}

int RunBench(int argc, char** argv) {
  if (argc < 2) {
    PrintBenchHelp(stderr);
    return 2;
  }
  if (IsHelpArg(argv[1])) {
    PrintBenchHelp(stdout);
    return 0;
  }
  if (const Command* v = BenchVerbs().Find(argv[1])) return v->run(argc - 1, argv + 1);
  std::fprintf(stderr, "weft bench: unknown verb '%s' (weft bench --help lists them)\n",
               argv[1]);
  return 2;
}

}  // namespace

int UsageError(const std::string& msg) {
  std::fprintf(stderr, "weft bench: %s\n", msg.c_str());
  return 2;
}

CommandList& BenchVerbs() {
  static CommandList verbs;
  return verbs;
}

WEFT_COMMAND("bench", "benchmarks: serve (a server), plot, compare", RunBench);

}  // namespace weft::apps
