// Verbs of `weft bench` (serve, plot, compare, and later model/engine).
// Each verb lives in its own apps/bench/ file and registers itself:
//
//   WEFT_BENCH_VERB("serve", "benchmark an OpenAI-compatible server",
//                   RunBenchServe);
//
// The run function gets argv with argv[0] = the verb and returns the exit
// code (0 ok, 1 runtime failure, 2 bad usage or input).
#pragma once

#include <string>
#include <vector>

#include "apps/command.h"

namespace weft::apps {

CommandList& BenchVerbs();

// Verbs sorted by name.
inline std::vector<Command> AllBenchVerbs() { return BenchVerbs().Sorted(); }

// Prints "weft bench: MSG" to stderr; returns 2 (bad usage or input).
int UsageError(const std::string& msg);

}  // namespace weft::apps

#define WEFT_BENCH_VERB(name, summary, fn)                                           \
  static ::weft::apps::CommandRegistrar weft_bench_verb_##fn(::weft::apps::BenchVerbs(), \
                                                             name, summary, fn)
