// Facts about a model file for reports: its quantization's llama.cpp name.
//
// Thread safety: plain functions over values the caller owns.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf.h"

namespace weft::runtime {

// The llama.cpp name of a general.file_type value ("Q4_K_M"), or "".
std::string FileTypeName(uint32_t file_type);

// The quantization of a model: general.file_type's name, else the type
// holding most bytes of 2-D weights ("Q4_0"), else "".
std::string Quantization(const gguf::GgufFile& file);

}  // namespace weft::runtime
