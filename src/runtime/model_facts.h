// Facts about a model file for reports: its quantization's llama.cpp name.
//
// Thread safety: plain functions over values the caller owns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gguf/gguf.h"
#include "tensor/types.h"

namespace weft::runtime {

// The llama.cpp name of a general.file_type value ("Q4_K_M"), or "".
std::string FileTypeName(uint32_t file_type);

// The general.file_type of a file whose weights are all `type`: the one
// FileTypeName names after the type ("Q8_0"), or a K-quant's small mix
// ("Q4_K_S"). nullopt for a type llama.cpp has no file type for.
std::optional<uint32_t> FileTypeOf(GgmlType type);

// The quantization of a model: general.file_type's name, else the type
// holding most bytes of 2-D weights ("Q4_0"), else "".
std::string Quantization(const gguf::GgufFile& file);

}  // namespace weft::runtime
