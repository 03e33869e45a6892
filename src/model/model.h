// Model: a loaded GGUF transformer (config + zero-copy weights) and its
// forward pass in float32 activations over quantized weights.
//
//   ASSIGN_OR_RETURN(auto model, Model::Load(path));
//   ASSIGN_OR_RETURN(auto kv, ContiguousKvCache::Create(model->config(), 4096));
//   std::vector<float> logits;  // [num_outputs, n_vocab]
//   RETURN_IF_ERROR(model->Forward(Batch::ForPrompt(ids), kv.get(), &logits));
//
// Thread safety: Load() result is immutable; Forward() may run concurrently
// on different caches. Invariant: weights() matches config() (checked at
// load).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_cache.h"
#include "model/weights.h"
#include "util/status.h"

namespace weft::model {

struct ForwardOptions {
  int n_threads = 1;  // threads for matmuls and attention (caller included)
};

class Model {
 public:
  // Opens, parses and checks `path`.
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path);
  // Takes ownership of an opened file.
  static StatusOr<std::unique_ptr<Model>> FromGguf(
      std::unique_ptr<gguf::GgufFile> file);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::GgufFile& gguf() const { return *file_; }

  // Runs `batch` (one sequence; consecutive positions starting at most at
  // cache->Length(seq)), writes its K/V into `cache`, and stores the logits
  // of the tokens with logits[i] != 0, in batch order, in `logits`
  // ([num_outputs, n_vocab]). Errors: empty batch, token id out of range,
  // several sequences, gaps in positions, or no room in the cache. On error
  // the cache length is unchanged.
  Status Forward(const Batch& batch, KvCache* cache, std::vector<float>* logits,
                 const ForwardOptions& options = {}) const;

 private:
  Model() = default;
  Status Validate(const Batch& batch, const KvCache& cache) const;

  std::unique_ptr<gguf::GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
};

}  // namespace weft::model
