// The `weft` binary: one executable, one subcommand per task (see command.h).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"

namespace weft::apps {
namespace {

std::vector<Command>& Registry() {
  static std::vector<Command> commands;
  return commands;
}

void PrintHelp() {
  std::printf(
      "weft %s (%s): an LLM inference server for GGUF models\n\n"
      "usage: weft COMMAND [ARGS...]   (weft COMMAND --help for each)\n\n"
      "commands:\n",
      WEFT_VERSION, WEFT_GIT_COMMIT);
  for (const auto& c : AllCommands()) {
    std::printf("  %-12s %s\n", c.name, c.summary);
  }
}

}  // namespace

CommandRegistrar::CommandRegistrar(const char* name, const char* summary,
                                   int (*run)(int, char**)) {
  Registry().push_back({name, summary, run});
}

std::vector<Command> AllCommands() {
  std::vector<Command> all = Registry();
  std::sort(all.begin(), all.end(), [](const Command& a, const Command& b) {
    return std::strcmp(a.name, b.name) < 0;
  });
  return all;
}

}  // namespace weft::apps

int main(int argc, char** argv) {
  using weft::apps::AllCommands;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    weft::apps::PrintHelp();
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("weft %s (%s)\n", WEFT_VERSION, WEFT_GIT_COMMIT);
    return 0;
  }
  for (const auto& c : AllCommands()) {
    if (std::strcmp(argv[1], c.name) == 0) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "weft: unknown command '%s' (weft --help lists them)\n",
               argv[1]);
  return 2;
}
