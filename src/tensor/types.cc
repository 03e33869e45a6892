#include "tensor/types.h"

#include <array>
#include <cctype>

#include "util/strings.h"

namespace weft {
namespace {

constexpr int64_t kQK = 256;  // super-block size of the K-quants

constexpr std::array<GgmlTypeTraits, 32> kTraits = {{
    {GgmlType::kF32, "f32", 1, 4},
    {GgmlType::kF16, "f16", 1, 2},
    {GgmlType::kQ4_0, "q4_0", 32, 2 + 16},
    {GgmlType::kQ4_1, "q4_1", 32, 2 + 2 + 16},
    {GgmlType::kQ5_0, "q5_0", 32, 2 + 4 + 16},
    {GgmlType::kQ5_1, "q5_1", 32, 2 + 2 + 4 + 16},
    {GgmlType::kQ8_0, "q8_0", 32, 2 + 32},
    {GgmlType::kQ8_1, "q8_1", 32, 2 + 2 + 32},
    {GgmlType::kQ2_K, "q2_K", kQK, kQK / 16 + kQK / 4 + 2 + 2},
    {GgmlType::kQ3_K, "q3_K", kQK, kQK / 8 + kQK / 4 + 12 + 2},
    {GgmlType::kQ4_K, "q4_K", kQK, 2 + 2 + 12 + kQK / 2},
    {GgmlType::kQ5_K, "q5_K", kQK, 2 + 2 + 12 + kQK / 8 + kQK / 2},
    {GgmlType::kQ6_K, "q6_K", kQK, kQK / 2 + kQK / 4 + kQK / 16 + 2},
    {GgmlType::kQ8_K, "q8_K", kQK, 4 + kQK + kQK / 16 * 2},
    {GgmlType::kIQ2_XXS, "iq2_xxs", kQK, 2 + kQK / 8 * 2},
    {GgmlType::kIQ2_XS, "iq2_xs", kQK, 2 + kQK / 8 * 2 + kQK / 32},
    {GgmlType::kIQ3_XXS, "iq3_xxs", kQK, 2 + 3 * kQK / 8},
    {GgmlType::kIQ1_S, "iq1_s", kQK, 2 + kQK / 8 + kQK / 32 * 2},
    {GgmlType::kIQ4_NL, "iq4_nl", 32, 2 + 16},
    {GgmlType::kIQ3_S, "iq3_s", kQK, 2 + kQK / 4 + kQK / 32 + kQK / 8 + 4},
    {GgmlType::kIQ2_S, "iq2_s", kQK, 2 + kQK / 4 + kQK / 32 + kQK / 32},
    {GgmlType::kIQ4_XS, "iq4_xs", kQK, 2 + 2 + kQK / 64 + kQK / 2},
    {GgmlType::kI8, "i8", 1, 1},
    {GgmlType::kI16, "i16", 1, 2},
    {GgmlType::kI32, "i32", 1, 4},
    {GgmlType::kI64, "i64", 1, 8},
    {GgmlType::kF64, "f64", 1, 8},
    {GgmlType::kIQ1_M, "iq1_m", kQK, kQK / 8 + kQK / 16 + kQK / 32},
    {GgmlType::kBF16, "bf16", 1, 2},
    {GgmlType::kTQ1_0, "tq1_0", kQK, (kQK - 4 * kQK / 64) / 5 + kQK / 64 + 2},
    {GgmlType::kTQ2_0, "tq2_0", kQK, kQK / 4 + 2},
    {GgmlType::kMXFP4, "mxfp4", 32, 1 + 16},
}};

}  // namespace

std::optional<GgmlTypeTraits> GetTypeTraits(uint32_t type_id) {
  for (const auto& t : kTraits) {
    if (static_cast<uint32_t>(t.type) == type_id) return t;
  }
  return std::nullopt;
}

const GgmlTypeTraits& TypeTraits(GgmlType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  CHECK(false) << "unknown GgmlType " << static_cast<uint32_t>(type);
  return kTraits[0];
}

std::string_view TypeName(GgmlType type) { return TypeTraits(type).name; }

std::optional<GgmlType> ParseTypeName(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(name[i])) !=
          std::tolower(static_cast<unsigned char>(t.name[i]))) {
        eq = false;
        break;
      }
    }
    if (eq) return t.type;
  }
  return std::nullopt;
}

StatusOr<uint64_t> RowBytes(GgmlType type, uint64_t n) {
  const GgmlTypeTraits& t = TypeTraits(type);
  uint64_t bs = static_cast<uint64_t>(t.block_size);
  if (n % bs != 0) {
    return InvalidArgumentError(StrFormat(
        "%llu elements is not a multiple of the %s block size %llu",
        static_cast<unsigned long long>(n), std::string(t.name).c_str(),
        static_cast<unsigned long long>(bs)));
  }
  uint64_t blocks = n / bs;
  uint64_t ts = static_cast<uint64_t>(t.type_size);
  if (blocks > UINT64_MAX / ts) {
    return OutOfRangeError("row byte count overflows");
  }
  return blocks * ts;
}

}  // namespace weft
