// Python-compatible text helpers for the template interpreter: str() and
// repr() of values, json.dumps (as Hugging Face's tojson filter calls it),
// float repr, and the UTF-8 code point operations that Python str methods
// do on code points (len, slicing, strip with Unicode whitespace).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/value.h"
#include "util/status.h"

namespace weft::chat {

// Python repr(float): shortest round trip, "1.0", "1e-05", "inf", "nan".
std::string PyFloatRepr(double d);
// Python str(x) (Undefined -> "").
std::string PyStr(const Value& v);
// Python repr(x).
std::string PyRepr(const Value& v);

struct JsonOptions {
  // Spaces per level (or the text in indent_str); < 0: no indent (one line).
  int indent = -1;
  // When set, used instead of `indent` spaces (json.dumps(indent="\t")).
  std::optional<std::string> indent_str;
  // Item and key separators; empty: Python's defaults for the indent mode
  // (", " / ": " without indent, "," / ": " with).
  std::string item_sep;
  std::string key_sep;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX
  bool sort_keys = false;     // sort dict keys
};
// json.dumps(v, ...); InvalidArgument for values JSON cannot hold
// (Undefined, callables, namespaces).
StatusOr<std::string> ToJson(const Value& v, const JsonOptions& opts = {});

// HTML escaping as markupsafe.escape: & < > " ' -> &amp; &lt; &gt; &#34; &#39;
std::string HtmlEscape(std::string_view s);

// --- UTF-8 code points -----------------------------------------------------
// Decodes UTF-8 leniently (an invalid byte becomes one code point U+FFFD-like
// value 0xDC00+byte, re-encoded as the original byte).
std::vector<uint32_t> DecodeUtf8(std::string_view s);
std::string EncodeUtf8(const std::vector<uint32_t>& cps, size_t begin,
                       size_t end);
void AppendUtf8(uint32_t cp, std::string* out);
size_t CodePointCount(std::string_view s);
bool IsAscii(std::string_view s);
// Python str.isspace() for one code point.
bool IsPyWhitespace(uint32_t cp);
// Python str.strip/lstrip/rstrip; `chars` nullopt: whitespace.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars,
                    bool left, bool right);
// Python str.splitlines() (keepends=False).
std::vector<std::string> PySplitLines(std::string_view s);
// ASCII-only case mappings (non-ASCII passes through unchanged).
// Python's s.replace(from, to, count) for a non-empty `from`; count < 0
// replaces every occurrence.
std::string PyReplace(std::string_view s, std::string_view from,
                      std::string_view to, int64_t count);

std::string AsciiLower(std::string_view s);
std::string AsciiUpper(std::string_view s);

}  // namespace weft::chat
