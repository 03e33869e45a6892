// Assembling the real backend from a model file: opens the GGUF model,
// builds its tokenizer, chat template, ModelExecutor (paged KV sized from a
// byte budget) and Engine, and wraps them in a server::EngineBackend with
// the model's facts filled in (path, size, architecture, quantization,
// context length, parameter count). `weft serve` and `weft chat` start
// through here; the server itself only sees the Backend interface.
//
// Thread safety: BuildBackend may be called from any thread; the result is
// as thread-safe as EngineBackend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/scheduler_config.h"
#include "server/engine_backend.h"
#include "util/status.h"

namespace weft::runtime {

// What to build: the model file and how to size and run the engine.
struct EngineConfig {
  std::string model_path;          // GGUF file
  std::string model_id;            // name for clients; empty = file stem
  // Jinja source overriding the GGUF's tokenizer.chat_template; empty =
  // the GGUF's, else a built-in one chosen from the vocabulary.
  std::string chat_template;
  std::string chat_template_path;  // the file it was read from, for reports
  engine::SchedulerConfig scheduler;  // max_model_len 0 is replaced by
                                      // min(training context, 4096)
  uint64_t kv_bytes = 512ull << 20;   // KV cache budget
  int kv_block_size = 16;             // tokens per KV block
  std::string kv_type = "f16";        // KV row storage: "f32", "f16", "q8_0"
  // Give a model's sliding-window layers their own KV block group (released
  // out of the window); false keeps every layer's blocks (one group).
  bool kv_split_groups = true;
  int threads = 0;                    // compute threads; 0 = all cores
  // JSON-lines engine trace (docs/trace.md); empty = off.
  std::string trace_path;
  // scheduler.spec_method kDraft: the draft model's GGUF (required then;
  // its vocabulary must be the target's, checked here).
  std::string draft_model_path;
  // The draft model's KV blocks (of kv_block_size tokens, kv_type rows);
  // 0 = as many as the target's full-attention group, so the draft holds
  // as many tokens as the target's cache (fewer: sequences that find no
  // room get no guesses).
  int draft_kv_blocks = 0;
};

// What was built, for the start-up log.
struct EngineSummary {
  std::string model;        // one line: architecture, layers, ...
  int64_t kv_blocks = 0;    // KV blocks allocated (full-attention group)
  int64_t kv_local_blocks = 0;  // of the sliding-window group (0: none)
  uint64_t kv_bytes = 0;    // their bytes
  uint64_t weight_bytes = 0;  // the model file's tensor bytes (mapped)
  std::string kv_type;      // "f16", ...
  int max_model_len = 0;    // the context length in use
  // "gguf", "file:PATH" or "builtin:NAME", then " (unusable: ...)" when
  // it does not parse.
  std::string chat_template;
  std::string draft_model;      // one line, as `model`; empty: no draft
  int64_t draft_kv_blocks = 0;  // the draft's KV blocks
  uint64_t draft_kv_bytes = 0;  // and their bytes
};

// Errors: the model file is missing/invalid (InvalidArgument, NotFound,
// DataLoss, Unimplemented), the KV budget holds no full sequence
// (InvalidArgument), a bad kv_type (InvalidArgument), allocation failures
// (ResourceExhausted), a draft model that is missing, invalid or has
// another vocabulary (its path in the message). `summary` may be null.
StatusOr<std::unique_ptr<server::EngineBackend>> BuildBackend(
    const EngineConfig& config, EngineSummary* summary);

}  // namespace weft::runtime
