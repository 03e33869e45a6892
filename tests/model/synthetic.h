// Tiny random-weight GGUF models built in memory for unit tests.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "model/model.h"

namespace weft::model::testing {

struct SyntheticSpec {
  std::string arch = "llama";  // llama, qwen2, gemma3, qwen3moe, gpt-oss, qwen3, gemma2 or phi3
  int64_t n_embd = 32;
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t head_dim = 0;        // 0: n_embd / n_head, no key_length key
  int64_t n_ff = 64;
  int64_t n_vocab = 64;
  int64_t sliding_window = 4;  // gemma2, gemma3 and gpt-oss only
  int64_t n_expert = 6;        // MoE only: experts per layer
  int64_t n_expert_used = 2;   // MoE only: experts per token (n_ff: per expert)
  bool tied = false;           // omit output.weight
  GgmlType type = GgmlType::kF32;  // matrices
  std::optional<GgmlType> expert_type;  // MoE expert tensors; unset: type
  uint32_t seed = 1;
  std::string skip_tensor;         // leave this tensor out
  std::string wrong_shape_tensor;  // give this tensor one extra row/element
  // Called before serializing (to break the file on purpose).
  std::function<void(gguf::GgufWriter&)> edit;
};

// The serialized GGUF.
std::vector<uint8_t> BuildSynthetic(const SyntheticSpec& spec);

// A model over a buffer owned by the returned holder.
struct SyntheticModel {
  std::vector<uint8_t> bytes;
  std::unique_ptr<Model> model;
};
StatusOr<SyntheticModel> LoadSynthetic(const SyntheticSpec& spec,
                                       const LoadOptions& options = {});

}  // namespace weft::model::testing
