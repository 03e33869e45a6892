// Helpers shared by config.cc (the original families) and config_archs.cc
// (qwen3, gemma2, phi3): typed reads of GGUF metadata with errors that name
// the key, and the per-architecture layout of the newer families.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.h"
#include "model/config.h"
#include "util/status.h"

namespace weft::model::config_internal {

// "<key>" as an integer; NotFound names the key.
StatusOr<int64_t> GetInt(const gguf::GgufFile& f, const std::string& key);
// The integer at `key`, or `def` when absent.
StatusOr<int64_t> GetIntOr(const gguf::GgufFile& f, const std::string& key,
                           int64_t def);
// The number at `key`, or `def` when absent.
StatusOr<double> GetFloatOr(const gguf::GgufFile& f, const std::string& key,
                            double def);
// InvalidArgument naming `key` unless 1 <= v <= max.
Status Positive(const gguf::GgufFile& f, const std::string& key, int64_t v,
                int64_t max = int64_t{1} << 24);

// The layout of the architectures config_archs.cc handles (qwen3, gemma2,
// phi3): RoPE pairing, norms, activations, sliding window and attention
// scale, as llama.cpp's load_arch_hparams and graphs set them. `p` is
// "<arch>.". Called after the dimensions, RoPE and softcapping are read.
Status SetNewArchLayout(const gguf::GgufFile& f, const std::string& p,
                        ModelConfig* c);

}  // namespace weft::model::config_internal
