// The model shape and tensor list of `weft make-model`, and the parts that
// differ per architecture for the newer families (qwen3, gemma2, phi3):
// their tensors and their metadata keys, written as llama.cpp's converter
// writes them so that llama.cpp loads the files.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace weft::apps {

// The hyper-parameters of the model to write.
struct ModelShape {
  std::string arch;              // llama | qwen2 | gemma3 | qwen3moe | qwen3 | gemma2 | phi3
  int64_t dim = 0;               // embedding length
  int64_t layers = 0;            // transformer blocks
  int64_t heads = 0;             // query heads
  int64_t kv_heads = 0;          // key/value heads (GQA when < heads)
  int64_t ffn = 0;               // feed-forward hidden size (MoE: per expert)
  int64_t experts = 0;           // MoE: experts per layer (0: dense)
  int64_t experts_used = 0;      // MoE: experts chosen per token
  int64_t head_dim = 0;          // per-head size of q/k/v
  int64_t ctx = 4096;            // context_length
  int64_t vocab = 0;             // from the vocabulary file
  int64_t sliding_window = 512;  // gemma2 / gemma3 only
  double eps = 1e-5;             // RMS norm epsilon
  double rope_base = 10000;      // rope.freq_base
  bool tied = false;             // no output.weight: reuse token_embd
  double attn_softcap = 50;      // gemma2: attn_logit_softcapping
  double final_softcap = 30;     // gemma2: final_logit_softcapping
};

// How a tensor's elements are drawn: center + scale * N(0, 1)-ish.
enum class Init {
  kWeight,  // 0 + std * N
  kNorm,    // 1 + 0.01 * N
  kBias,    // 0 + std * N
  kFactor,  // 1.5 + 0.4 * N: RoPE frequency factors, all > 0.1
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the row length
  Init init;
};

// general.name when --name is not given: "synthetic-ARCH", but
// "synthetic-phi" for phi3 (llama.cpp gives a vocabulary whose name has
// "phi3" Phi-3's token attributes, which need an <|endoftext|> token).
std::string DefaultModelName(const std::string& arch);

// Whether make_model_arch.cc writes `arch` (qwen3, gemma2, phi3).
bool IsNewArch(const std::string& arch);

// The tensors of a qwen3 / gemma2 / phi3 model, in file order.
std::vector<TensorSpec> BuildNewArchSpecs(const ModelShape& s);

// The architecture-specific metadata keys of a qwen3 / gemma2 / phi3 model
// (the common ones are written by make_model.cc).
void SetNewArchMetadata(const ModelShape& s, gguf::GgufWriter* w);

}  // namespace weft::apps
