// The names of an enum's values, from a table instead of a switch.
#pragma once

#include <cstddef>
#include <type_traits>

namespace weft {

// The name of `value` from `names`, one name per value of a dense enum (its
// values 0, 1, ..., N - 1, in declaration order). kLast, the enum's last
// value, is named so that a table with a name too many or too few (a value
// inserted or removed) does not compile:
//
//   std::string_view ArchName(Arch arch) {
//     static constexpr std::string_view kNames[] = {"llama", "qwen2",
//                                                   "gemma3"};
//     return EnumName<Arch::kGemma3>(arch, kNames, "?");
//   }
//
// A value outside the table (a cast from bad input) gets `unknown`.
template <auto kLast, typename Name, size_t N>
constexpr Name EnumName(decltype(kLast) value, const Name (&names)[N],
                        std::type_identity_t<Name> unknown) {
  static_assert(std::is_enum_v<decltype(kLast)>,
                "kLast: the enum's last value");
  static_assert(static_cast<size_t>(kLast) + 1 == N,
                "one name per enum value, in order");
  const auto i = static_cast<
      std::make_unsigned_t<std::underlying_type_t<decltype(kLast)>>>(value);
  return i < N ? names[i] : unknown;
}

}  // namespace weft
