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

// Commands that register themselves during static initialization: weft's
// subcommands (SubCommands()) and `weft bench`'s verbs (bench/bench.h).
class CommandList {
 public:
  void Add(const Command& c) { commands_.push_back(c); }
  // Sorted by name.
  std::vector<Command> Sorted() const;
  // The command named `name`, or null.
  const Command* Find(const char* name) const;

 private:
  std::vector<Command> commands_;
};

struct CommandRegistrar {
  CommandRegistrar(CommandList& list, const char* name, const char* summary,
                   int (*run)(int, char**)) {
    list.Add({name, summary, run});
  }
};

CommandList& SubCommands();

// "--help", "-h" or "help".
bool IsHelpArg(const char* arg);

// Commands sorted by name.
inline std::vector<Command> AllCommands() { return SubCommands().Sorted(); }

}  // namespace weft::apps

#define WEFT_COMMAND(name, summary, fn)                                         \
  static ::weft::apps::CommandRegistrar weft_command_##fn(::weft::apps::SubCommands(), \
                                                          name, summary, fn)
