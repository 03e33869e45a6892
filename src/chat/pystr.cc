#include "chat/pystr.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "util/strings.h"

namespace weft::chat {
namespace {

// Invalid UTF-8 bytes decode to 0xDC00 + byte (Python's surrogateescape) so
// that they re-encode to the same byte.
constexpr uint32_t kEscapeBase = 0xDC00;

// Approximates Python's str.isprintable() for non-ASCII code points.
bool IsPrintableNonAscii(uint32_t cp) {
  if (cp < 0xA1) return false;  // C1 controls and NBSP
  if (cp == 0xAD) return false;
  if (cp >= 0x2000 && cp <= 0x200F) return false;
  if (cp >= 0x2028 && cp <= 0x202F) return false;
  if (cp >= 0x205F && cp <= 0x206F) return false;
  if (cp == 0x3000 || cp == 0xFEFF || cp == 0x1680) return false;
  if (cp >= 0xD800 && cp <= 0xF8FF) return false;  // surrogates, private use
  if (cp >= 0xFFF0 && cp <= 0xFFFF) return cp == 0xFFFC || cp == 0xFFFD;
  if (cp >= 0xF0000) return false;
  return true;
}

std::string ReprString(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (uint32_t cp : DecodeUtf8(s)) {
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += StrFormat("\\x%02x", cp);
    } else if (cp < 0x7F) {
      out += static_cast<char>(cp);
    } else if (cp >= kEscapeBase && cp < kEscapeBase + 0x100) {
      out += StrFormat("\\udc%02x", cp - kEscapeBase);
    } else if (!IsPrintableNonAscii(cp)) {
      if (cp < 0x100) {
        out += StrFormat("\\x%02x", cp);
      } else if (cp < 0x10000) {
        out += StrFormat("\\u%04x", cp);
      } else {
        out += StrFormat("\\U%08x", cp);
      }
    } else {
      AppendUtf8(cp, &out);
    }
  }
  out += quote;
  return out;
}

}  // namespace

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res =
      std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool neg = false;
  size_t p = 0;
  if (sci[0] == '-') {
    neg = true;
    p = 1;
  }
  size_t epos = sci.find('e');
  std::string digits;
  for (size_t i = p; i < epos; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  int exp = std::atoi(sci.c_str() + epos + 1);
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = neg ? "-" : "";
  int nd = static_cast<int>(digits.size());
  if (exp >= -4 && exp < 16) {
    if (exp < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-exp - 1), '0');
      out += digits;
    } else if (exp >= nd - 1) {
      out += digits;
      out.append(static_cast<size_t>(exp - (nd - 1)), '0');
      out += ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(exp + 1));
      out += '.';
      out += digits.substr(static_cast<size_t>(exp + 1));
    }
  } else {
    out += digits[0];
    if (nd > 1) {
      out += '.';
      out += digits.substr(1);
    }
    out += StrFormat("e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  }
  return out;
}

std::string PyStr(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return "";
    case ValueKind::kString:
      return v.str();
    default:
      return PyRepr(v);
  }
}

std::string PyRepr(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return "Undefined";
    case ValueKind::kNone:
      return "None";
    case ValueKind::kBool:
      return v.boolean() ? "True" : "False";
    case ValueKind::kInt:
      return std::to_string(v.integer());
    case ValueKind::kFloat:
      return PyFloatRepr(v.number());
    case ValueKind::kString:
      return v.is_safe() ? "Markup(" + ReprString(v.str()) + ")"
                         : ReprString(v.str());
    case ValueKind::kList:
    case ValueKind::kTuple: {
      std::string out = v.is_list() ? "[" : "(";
      const auto& items = v.list();
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ", ";
        out += PyRepr(items[i]);
      }
      if (v.is_tuple() && items.size() == 1) out += ',';
      out += v.is_list() ? "]" : ")";
      return out;
    }
    case ValueKind::kDict:
    case ValueKind::kNamespace: {
      std::string out = v.is_namespace() ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, val] : v.dict().entries()) {
        if (!first) out += ", ";
        first = false;
        out += PyRepr(k) + ": " + PyRepr(val);
      }
      out += v.is_namespace() ? "}>" : "}";
      return out;
    }
    case ValueKind::kCallable:
      return "<function " + v.callable().Name() + ">";
  }
  return "";
}

std::string HtmlEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<uint32_t> DecodeUtf8(std::string_view s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80         ? 0
            : (c >> 5) == 6  ? 1
            : (c >> 4) == 14 ? 2
            : (c >> 3) == 30 ? 3
                             : -1;
    uint32_t cp = n == 0   ? c
                  : n == 1 ? (c & 0x1F)
                  : n == 2 ? (c & 0x0F)
                           : (c & 0x07);
    bool ok = n >= 0 && i + static_cast<size_t>(n) < s.size();
    for (int k = 1; ok && k <= n; ++k) {
      unsigned char cc =
          static_cast<unsigned char>(s[i + static_cast<size_t>(k)]);
      if ((cc >> 6) != 2) {
        ok = false;
      } else {
        cp = (cp << 6) | (cc & 0x3F);
      }
    }
    if (ok && n > 0) {
      static const uint32_t kMin[4] = {0, 0x80, 0x800, 0x10000};
      if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp < 0xE000)) {
        ok = false;
      }
    }
    if (!ok) {
      out.push_back(kEscapeBase + c);
      i += 1;
    } else {
      out.push_back(cp);
      i += static_cast<size_t>(n) + 1;
    }
  }
  return out;
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp >= kEscapeBase + 0x80 && cp < kEscapeBase + 0x100) {
    *out += static_cast<char>(cp - kEscapeBase);
  } else {
    weft::AppendUtf8(cp, out);
  }
}

std::string EncodeUtf8(const std::vector<uint32_t>& cps, size_t begin,
                       size_t end) {
  std::string out;
  for (size_t i = begin; i < end && i < cps.size(); ++i)
    AppendUtf8(cps[i], &out);
  return out;
}

size_t CodePointCount(std::string_view s) {
  if (IsAscii(s)) return s.size();
  return DecodeUtf8(s).size();
}

bool IsAscii(std::string_view s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

bool IsPyWhitespace(uint32_t cp) {
  switch (cp) {
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
    case 0x1C:
    case 0x1D:
    case 0x1E:
    case 0x1F:
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars,
                    bool left, bool right) {
  std::vector<uint32_t> cps = DecodeUtf8(s);
  std::vector<uint32_t> set;
  if (chars.has_value()) set = DecodeUtf8(*chars);
  auto strip = [&](uint32_t cp) {
    if (!chars.has_value()) return IsPyWhitespace(cp);
    return std::find(set.begin(), set.end(), cp) != set.end();
  };
  size_t b = 0, e = cps.size();
  if (left) {
    while (b < e && strip(cps[b])) ++b;
  }
  if (right) {
    while (e > b && strip(cps[e - 1])) --e;
  }
  return EncodeUtf8(cps, b, e);
}

std::vector<std::string> PySplitLines(std::string_view s) {
  std::vector<std::string> lines;
  std::vector<uint32_t> cps = DecodeUtf8(s);
  size_t start = 0;
  size_t i = 0;
  while (i < cps.size()) {
    uint32_t c = cps[i];
    bool brk = c == '\n' || c == '\r' || c == '\v' || c == '\f' || c == 0x1C ||
               c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 ||
               c == 0x2029;
    if (!brk) {
      ++i;
      continue;
    }
    lines.push_back(EncodeUtf8(cps, start, i));
    if (c == '\r' && i + 1 < cps.size() && cps[i + 1] == '\n') ++i;
    ++i;
    start = i;
  }
  if (start < cps.size()) lines.push_back(EncodeUtf8(cps, start, cps.size()));
  return lines;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

std::string PyReplace(std::string_view s, std::string_view from,
                      std::string_view to, int64_t count) {
  CHECK(!from.empty());
  std::string out;
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s, pos, hit - pos);
    out += to;
    pos = hit + from.size();
  }
  out.append(s, pos, std::string_view::npos);
  return out;
}

}  // namespace weft::chat
