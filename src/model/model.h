// Model: a loaded GGUF transformer (config + zero-copy weights) and its
// forward pass in float32 activations over quantized weights.
//
//   ASSIGN_OR_RETURN(auto model, Model::Load(path));
//   ASSIGN_OR_RETURN(auto kv, ContiguousKvStorage::Create(model->config(), 4096));
//   std::vector<float> logits;  // [num_outputs, n_vocab]
//   RETURN_IF_ERROR(model->Forward(Batch::ForPrompt(ids), kv.get(), &logits));
//
// Matmuls, norms, RoPE, activations and attention run on the fast kernels
// (kernels/) with a thread pool owned by the Model, created on the first
// Forward and re-created when ForwardOptions.n_threads changes.
//
// Thread safety: config(), weights() and gguf() are immutable. Forward() may
// be called from several threads on different caches; the calls are
// serialized by an internal mutex (they share the pool and the scratch
// activations). Invariant: weights() matches config() (checked at load).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "kernels/kernel_table.h"
#include "kernels/matmul.h"
#include "kernels/thread_pool.h"
#include "model/batch.h"
#include "model/config.h"
#include "model/kv_storage.h"
#include "model/weights.h"
#include "util/status.h"

namespace weft::model {

struct ForwardOptions {
  // Threads for matmuls and attention (caller included). The model's pool
  // is (re)built with this many threads when it differs from the last call.
  int n_threads = 1;
  // Kernel table to run on; null: the active ISA (kernels::Kernels()).
  // Tests force kernels::GetKernels(Isa::kScalar) etc. with it.
  const kernels::KernelTable* kernels = nullptr;
  // Matmuls with float32 activations over dequantized weight rows (the
  // reference model/ops.h MatMul) instead of the kernels' int8/Q8_K
  // activation path; norms, RoPE and attention still use `kernels`. Slow;
  // for tests that check the forward formulas without quantization error.
  bool float_activations = false;
};

struct ForwardScratch;  // forward.cc

struct LoadOptions {
  // Repack the matrices of every format kernels::CanPackX8 takes (all the
  // quantized ones but Q8_1/Q8_K) into the kernels' x8 layout (RepackWeightsX8): faster matmuls at every batch size (decode reads one
  // sequential stream per 8 rows); the file's pages of the originals are
  // released, so memory stays about the file's size. Off: matmuls read the
  // mapped file in place (results differ in float rounding only).
  bool repack_x8 = true;
  // The context one sequence may reach; 0 = unknown. LongRoPE models
  // (phi3 with rope_factors_long/_short) use the long factors when it
  // exceeds rope.scaling.original_context_length, else the short ones
  // (llama.cpp's rule, with its n_ctx_seq).
  int64_t n_ctx_seq = 0;
};

class Model {
 public:
  // Opens, parses and checks `path`.
  static StatusOr<std::unique_ptr<Model>> Load(const std::string& path,
                                               const LoadOptions& options = {});
  // Takes ownership of an opened file.
  static StatusOr<std::unique_ptr<Model>> FromGguf(
      std::unique_ptr<gguf::GgufFile> file, const LoadOptions& options = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::GgufFile& gguf() const { return *file_; }

  // Runs `batch`: tokens of one or more sequences, in any interleaving;
  // the tokens of each sequence must have consecutive positions (in batch
  // order) starting at most at cache->Length(seq) (a prefill chunk or a
  // single decode token). Writes their K/V into `cache`; each token attends
  // only to its own sequence's positions <= its own. Stores the logits of
  // the tokens with logits[i] != 0, in batch order, in `logits`
  // ([num_outputs, n_vocab]). A sequence's results do not depend on the
  // other sequences in the batch (bitwise). Errors: empty batch, token or
  // sequence id out of range, gaps in positions, or no room in the cache.
  // On error no sequence's cache length changes.
  Status Forward(const Batch& batch, KvStorage* cache, std::vector<float>* logits,
                 const ForwardOptions& options = {}) const;

 private:
  Model();
  // Per sequence of the batch: its id, first position and token count.
  struct SeqSpan {
    int32_t seq = 0;
    int32_t start = 0;
    int32_t count = 0;
  };
  Status Validate(const Batch& batch, const KvStorage& cache,
                  std::vector<SeqSpan>* spans) const;
  // The pool for `n_threads` (null when 1). REQUIRES: mu_ held.
  kernels::ThreadPool* Pool(int n_threads) const;

  std::unique_ptr<gguf::GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;

  // Forward state, guarded by mu_.
  mutable std::mutex mu_;
  mutable std::unique_ptr<kernels::ThreadPool> pool_;
  mutable std::unique_ptr<ForwardScratch> scratch_;
};

}  // namespace weft::model
