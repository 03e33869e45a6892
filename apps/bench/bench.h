// Verbs of `weft bench` (serve, plot, compare, and later model/engine).
// Each verb lives in its own apps/bench/ file and registers itself:
//
//   WEFT_BENCH_VERB("serve", "benchmark an OpenAI-compatible server",
//                   RunBenchServe);
//
// The run function gets argv with argv[0] = the verb and returns the exit
// code (0 ok, 1 runtime failure, 2 bad usage or input).
#pragma once

#include <vector>

namespace weft::apps {

struct BenchVerb {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// Verbs sorted by name.
std::vector<BenchVerb> AllBenchVerbs();

struct BenchVerbRegistrar {
  BenchVerbRegistrar(const char* name, const char* summary,
                     int (*run)(int, char**));
};

}  // namespace weft::apps

#define WEFT_BENCH_VERB(name, summary, fn) \
  static ::weft::apps::BenchVerbRegistrar weft_bench_verb_##fn(name, summary, fn)
