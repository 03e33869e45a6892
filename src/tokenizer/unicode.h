// UTF-8 helpers for the tokenizers: lenient decoding (the way llama.cpp
// reads possibly broken input), strict validation for streaming output, and
// GPT-2's byte <-> printable-codepoint mapping used by byte-level BPE.
//
// Thread safety: pure functions over immutable tables.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "util/strings.h"

namespace weft::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence announced by `lead` (1 for ASCII and for
// stray continuation bytes, as llama.cpp's unicode_len_utf8 does).
inline size_t Utf8LenFromLead(uint8_t lead) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1,
                                       1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[lead >> 4];
}

// Appends the UTF-8 encoding of `cp` (must be <= 0x10FFFF) to `out`.
using ::weft::AppendUtf8;

// Decodes one code point at `*pos` the lenient llama.cpp way: a lead byte
// with the right number of continuation bytes is accepted (no overlong or
// surrogate checks); anything else yields U+FFFD and advances one byte.
uint32_t DecodeUtf8Lenient(std::string_view s, size_t* pos);

// Rewrites `s` as valid UTF-8 with the same code points llama.cpp would
// see: invalid bytes become U+FFFD, overlong forms are normalised, and
// surrogates or code points past U+10FFFF become U+FFFD.
std::string NormalizeUtf8Lenient(std::string_view s);

// Strict UTF-8 (RFC 3629). Returns the length of the valid sequence at
// `pos`, 0 if the bytes there can never form a valid sequence, or -1 if
// they are a valid but incomplete prefix cut off by the end of `s`.
int ValidUtf8SeqLen(std::string_view s, size_t pos);

// Replaces every byte that is not part of a valid UTF-8 sequence with
// U+FFFD (one per byte). Valid input is returned unchanged.
std::string SanitizeUtf8(std::string_view s);

bool IsValidUtf8(std::string_view s);

// GPT-2 byte-level mapping: each byte maps to one printable code point
// (bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to themselves, the others to
// U+0100 upwards). Returned as UTF-8.
std::string_view ByteToUnicode(uint8_t b);
// Inverse: the byte of a mapped code point, or -1 if `cp` is not one.
int UnicodeToByte(uint32_t cp);

}  // namespace weft::tokenizer
