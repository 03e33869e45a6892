// GGML tensor element types as stored in GGUF files: ids, block sizes and
// byte sizes. This table is what every reader of weights agrees on.
//
// Thread safety: immutable tables.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "util/status.h"

namespace weft {

// Values are the on-disk ids of ggml's `enum ggml_type`.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
};

struct GgmlTypeTraits {
  GgmlType type;
  std::string_view name;  // as ggml prints it: "q4_K", "f16", ...
  int64_t block_size;     // elements per block (1 for plain types)
  int64_t type_size;      // bytes per block
};

// The traits of a known type id, or nullopt for ids ggml never defined (or
// removed, like 4 and 5).
std::optional<GgmlTypeTraits> GetTypeTraits(uint32_t type_id);
// REQUIRES: `type` is a known enumerator.
const GgmlTypeTraits& TypeTraits(GgmlType type);
std::string_view TypeName(GgmlType type);
// Parses "q4_0", "Q4_K", "f16", "bf16" ... (case-insensitive).
std::optional<GgmlType> ParseTypeName(std::string_view name);

// Bytes of a row of `n` elements. Error if n is not a multiple of the block
// size or the byte count overflows.
StatusOr<uint64_t> RowBytes(GgmlType type, uint64_t n);

}  // namespace weft
