// Registry of `weft` subcommands. Each subcommand lives in its own file in
// apps/ and registers itself:
//
//   WEFT_COMMAND("inspect", "describe a GGUF model", RunInspect);
//
// The run function gets argv with argv[0] = the subcommand name and returns
// the exit code: 0 success, 1 runtime failure, 2 bad usage or bad input.
#pragma once

#include <vector>

namespace weft::apps {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// Commands sorted by name.
std::vector<Command> AllCommands();

struct CommandRegistrar {
  CommandRegistrar(const char* name, const char* summary,
                   int (*run)(int, char**));
};

}  // namespace weft::apps

#define WEFT_COMMAND(name, summary, fn)                       \
  static ::weft::apps::CommandRegistrar weft_command_##fn(name, summary, fn)
