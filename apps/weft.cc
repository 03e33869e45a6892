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

std::vector<Command> CommandList::Sorted() const {
  std::vector<Command> all = commands_;
  std::sort(all.begin(), all.end(), [](const Command& a, const Command& b) {
    return std::strcmp(a.name, b.name) < 0;
  });
  return all;
}

const Command* CommandList::Find(const char* name) const {
  for (const Command& c : commands_) {
    if (std::strcmp(name, c.name) == 0) return &c;
  }
  return nullptr;
}

bool IsHelpArg(const char* arg) {
  return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0 ||
         std::strcmp(arg, "help") == 0;
}

CommandList& SubCommands() {
  static CommandList commands;
  return commands;
}

}  // namespace weft::apps

int main(int argc, char** argv) {
  if (argc < 2 || weft::apps::IsHelpArg(argv[1])) {
    weft::apps::PrintHelp();
    return argc < 2 ? 2 : 0;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("weft %s (%s)\n", WEFT_VERSION, WEFT_GIT_COMMIT);
    return 0;
  }
  if (const weft::apps::Command* c = weft::apps::SubCommands().Find(argv[1])) {
    return c->run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "weft: unknown command '%s' (weft --help lists them)\n",
               argv[1]);
  return 2;
}
