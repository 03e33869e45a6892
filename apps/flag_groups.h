// Flag groups that several `weft` commands share: the model file, compute
// threads, the KV cache, a benchmark's repetitions and result file,
// sampling. Each group is a struct of values with defaults; a command passes
// the defaults and help texts that differ for it to the constructor, then
// registers the group where its flags belong in its --help:
//
//   ModelFlags model(WEFT_DEFAULT_MODEL);
//   ThreadFlags threads("compute threads", /*default_threads=*/4);
//   model.Register(&flags);
//   ...
//   threads.Register(&flags);
//
// The groups define flags only; each command checks the values' ranges
// with its own messages. Register keeps pointers to the fields: a group
// must outlive the FlagSet's Parse.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "apps/flags.h"

namespace weft::apps {

// --model / -m: the GGUF file to load.
struct ModelFlags {
  explicit ModelFlags(std::string default_path) : path(std::move(default_path)) {}

  // The GGUF model file; each command chooses its default (the chat model
  // for serve/run/chat, Gemma 3 270M for the benchmarks).
  std::string path;

  void Register(FlagSet* flags);
};

// --threads / -t: compute threads of the forward pass.
struct ThreadFlags {
  ThreadFlags() = default;
  ThreadFlags(std::string help_text, int64_t default_threads)
      : help(std::move(help_text)), threads(default_threads) {}

  // The help text: commands differ in what 0 means and whether the
  // calling thread is counted.
  std::string help = "compute threads; 0 = all cores";
  // The value; 0 = all cores where the command allows it.
  int64_t threads = 0;

  void Register(FlagSet* flags);
};

// --kv-type and, with a memory help text, --kv-memory: the KV cache's
// storage and size.
struct KvFlags {
  KvFlags() = default;
  explicit KvFlags(std::string type_help_text, std::string memory_help_text = "")
      : type_help(std::move(type_help_text)), memory_help(std::move(memory_help_text)) {}

  // --kv-type's help text.
  std::string type_help = "KV cache storage: f16, f32 or q8_0";
  // --kv-memory's help text; empty = the command has no --kv-memory.
  std::string memory_help;
  // Storage type name: f16, f32 or q8_0 (model::ParseKvType checks it).
  std::string type = "f16";
  // Size: bytes ("512M", "2G") or a fraction of free memory (ParseKvMemory).
  std::string memory = "512M";

  void Register(FlagSet* flags);
};

// --reps and --json: the repetitions and the result file of a measuring
// benchmark (`weft bench model`, `weft bench kv`).
struct MeasureFlags {
  // Timed repetitions after one warm-up.
  int64_t reps = 5;
  // Also write every figure to this JSON file; empty = none.
  std::string json_path;

  void Register(FlagSet* flags);
};

// --temp, --top-p, --top-k, --min-p, --repeat-penalty, --seed: the sampler
// of `weft run` and `weft chat`.
struct SamplingFlags {
  // Temperature; 0 = greedy.
  double temp = 0.8;
  // Nucleus sampling threshold in (0, 1].
  double top_p = 1.0;
  // Keep the k most likely tokens; 0 = off.
  int64_t top_k = 0;
  // Drop tokens below min_p * p(best); 0 = off.
  double min_p = 0.0;
  // Repetition penalty; 1 = off.
  double repeat_penalty = 1.0;
  // RNG seed; -1 = random.
  int64_t seed = -1;

  void Register(FlagSet* flags);
};

}  // namespace weft::apps
