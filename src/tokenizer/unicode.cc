#include "tokenizer/unicode.h"

#include <array>

namespace weft::tokenizer {

uint32_t DecodeUtf8Lenient(std::string_view s, size_t* pos) {
  const size_t i = *pos;
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[i + k]); };
  const auto cont = [&](size_t k) {
    return i + k < s.size() && (b(k) & 0xC0) == 0x80;
  };
  const uint8_t c = b(0);
  if (!(c & 0x80)) {
    *pos += 1;
    return c;
  }
  if ((c & 0xE0) == 0xC0 && cont(1)) {
    *pos += 2;
    return ((c & 0x1F) << 6) | (b(1) & 0x3F);
  }
  if ((c & 0xF0) == 0xE0 && cont(1) && cont(2)) {
    *pos += 3;
    return ((c & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  }
  if ((c & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
    *pos += 4;
    return ((c & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) |
           (b(3) & 0x3F);
  }
  *pos += 1;
  return kReplacementChar;
}

std::string NormalizeUtf8Lenient(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    // Fast path for ASCII runs.
    if (!(static_cast<uint8_t>(s[pos]) & 0x80)) {
      out.push_back(s[pos++]);
      continue;
    }
    uint32_t cp = DecodeUtf8Lenient(s, &pos);
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementChar;
    AppendUtf8(cp, &out);
  }
  return out;
}

int ValidUtf8SeqLen(std::string_view s, size_t pos) {
  const uint8_t c = static_cast<uint8_t>(s[pos]);
  if (c < 0x80) return 1;
  int len;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int k = 1; k < len; ++k) {
    if (pos + k >= s.size()) return -1;
    const uint8_t d = static_cast<uint8_t>(s[pos + k]);
    if (k == 1 ? (d < lo || d > hi) : (d & 0xC0) != 0x80) return 0;
  }
  return len;
}

std::string SanitizeUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (pos < s.size()) {
    const int n = ValidUtf8SeqLen(s, pos);
    if (n > 0) {
      out.append(s.substr(pos, n));
      pos += n;
    } else {
      AppendUtf8(kReplacementChar, &out);
      ++pos;
    }
  }
  return out;
}

bool IsValidUtf8(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const int n = ValidUtf8SeqLen(s, pos);
    if (n <= 0) return false;
    pos += n;
  }
  return true;
}

namespace {

struct ByteTables {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> from_unicode;  // mapped code points are < 0x144
  ByteTables() {
    from_unicode.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) ||
                        (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = keep ? b : next++;
      AppendUtf8(cp, &to_unicode[b]);
      from_unicode[cp] = b;
    }
  }
};

const ByteTables& Tables() {
  static const ByteTables* tables = new ByteTables();
  return *tables;
}

}  // namespace

std::string_view ByteToUnicode(uint8_t b) { return Tables().to_unicode[b]; }

int UnicodeToByte(uint32_t cp) {
  return cp < 512 ? Tables().from_unicode[cp] : -1;
}

}  // namespace weft::tokenizer
