// Command-line flags for `weft` subcommands. Parsed once, here in apps/;
// nothing deeper reads argv or the environment.
//
// Usage:
//   FlagSet flags("weft inspect MODEL", "Describe a GGUF file.");
//   bool json = false;
//   flags.Bool("json", &json, "print JSON");
//   std::vector<std::string> args;
//   if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
//
// Accepts --name=value, --name value, -x value for short aliases, --flag
// and --no-flag for booleans, and "--" to end flags. With an env prefix set,
// a flag not given on the command line is read from PREFIX_NAME (upper case,
// dashes as underscores).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace weft::apps {

class FlagSet {
 public:
  FlagSet(std::string usage, std::string description)
      : usage_(std::move(usage)), description_(std::move(description)) {}

  // Reads unset flags from the environment, e.g. "WEFT" -> WEFT_PORT.
  void SetEnvPrefix(std::string prefix) { env_prefix_ = std::move(prefix); }

  void String(std::string name, std::string* v, std::string help,
              char short_name = 0);
  void Int(std::string name, int64_t* v, std::string help, char short_name = 0);
  void Double(std::string name, double* v, std::string help,
              char short_name = 0);
  void Bool(std::string name, bool* v, std::string help, char short_name = 0);

  // Returns false when the caller should exit with *exit_code (0 after
  // --help, 2 after a usage error, which is printed to stderr).
  bool Parse(int argc, char** argv, std::vector<std::string>* positional,
             int* exit_code);

  // Whether the flag was given (on the command line or in the environment).
  bool WasSet(const std::string& name) const;
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    char short_name;
    std::string help;
    bool is_bool;
    std::string default_text;
    std::function<bool(const std::string&)> set;  // false: bad value
    bool was_set = false;
  };
  Flag* Find(const std::string& name);
  Flag* FindShort(char c);
  bool Apply(Flag* f, const std::string& value, std::string* error);
  // Sets each flag not given on the command line from PREFIX_NAME, if set.
  void ApplyEnvironment(std::string* error);

  std::string usage_;
  std::string description_;
  std::string env_prefix_;
  std::vector<Flag> flags_;
};

// --kv-memory's value: "512M", "2G", "1048576" (bytes, binary suffixes
// K/M/G/T, optional "iB" or "B") or a fraction of available memory in
// (0, 1) like "0.2". False with *error set on a bad value.
bool ParseKvMemory(const std::string& text, uint64_t* bytes,
                   std::string* error);

}  // namespace weft::apps
