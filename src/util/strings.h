// Small string helpers (GCC 12 has no std::format).
#pragma once

#include <cstdarg>
#include <string>
#include <string_view>
#include <vector>

namespace weft {

// printf-style formatting into a std::string.
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Splits on every occurrence of `sep` (empty pieces kept).
std::vector<std::string_view> StrSplit(std::string_view s, char sep);

// "1.50 GiB", "12.0 MiB", "512 B".
std::string HumanBytes(double bytes);

// Characters (code points) in UTF-8 text: the bytes that are not
// continuation bytes, so a truncated character counts where it starts.
// What the OpenAI API's text offsets and length limits count.
size_t Utf8Chars(std::string_view s);

// Appends the UTF-8 encoding of code point cp (<= 0x10FFFF) to *out.
void AppendUtf8(uint32_t cp, std::string* out);

// The value of hexadecimal digit c, or -1.
int HexDigit(char c);

// Escapes bytes outside printable ASCII as \xNN, for one-line messages.
std::string CEscape(std::string_view s, size_t max_len = 64);

}  // namespace weft
