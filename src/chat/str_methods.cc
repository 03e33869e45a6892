// The Python str methods templates call (strip, split, startswith, ...).
#include <algorithm>
#include <cctype>
#include <unordered_set>

#include "chat/builtins_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"

namespace weft::chat::internal {
namespace {

const std::unordered_set<std::string>& StringMethods() {
  static const auto* m = new std::unordered_set<std::string>{
      "strip",      "lstrip",  "rstrip",  "startswith", "endswith",
      "split",      "rsplit",  "upper",   "lower",      "title",
      "capitalize", "replace", "find",    "rfind",      "index",
      "count",      "join",    "format",  "isdigit",    "isalpha",
      "isalnum",    "isspace", "islower", "isupper",    "splitlines"};
  return *m;
}

StatusOr<Value> Split(const std::string& s, CallArgs& a, bool from_right) {
  const Value* sep_v = Arg(a, 0, "sep");
  const Value* max_v = Arg(a, 1, "maxsplit");
  int64_t maxsplit =
      max_v && (max_v->is_int() || max_v->is_bool()) ? max_v->integer() : -1;
  std::vector<std::string> parts;
  if (sep_v == nullptr || sep_v->is_none()) {
    // Runs of whitespace; no empty pieces.
    std::vector<uint32_t> cps = DecodeUtf8(s);
    std::vector<std::pair<size_t, size_t>> words;
    size_t i = 0;
    while (i < cps.size()) {
      while (i < cps.size() && IsPyWhitespace(cps[i])) ++i;
      if (i >= cps.size()) break;
      size_t j = i;
      while (j < cps.size() && !IsPyWhitespace(cps[j])) ++j;
      words.emplace_back(i, j);
      i = j;
    }
    size_t n = words.size();
    if (maxsplit >= 0 && static_cast<size_t>(maxsplit) + 1 < n) {
      size_t keep = static_cast<size_t>(maxsplit);
      if (!from_right) {
        for (size_t k = 0; k < keep; ++k)
          parts.push_back(EncodeUtf8(cps, words[k].first, words[k].second));
        parts.push_back(EncodeUtf8(cps, words[keep].first, cps.size()));
      } else {
        parts.push_back(EncodeUtf8(cps, 0, words[n - keep - 1].second));
        for (size_t k = n - keep; k < n; ++k)
          parts.push_back(EncodeUtf8(cps, words[k].first, words[k].second));
      }
    } else {
      for (const auto& [b, e] : words) parts.push_back(EncodeUtf8(cps, b, e));
    }
  } else {
    if (!sep_v->is_string())
      return TypeError("must be str or None, not " + sep_v->TypeName());
    const std::string& sep = sep_v->str();
    if (sep.empty()) return InvalidArgumentError("ValueError: empty separator");
    std::vector<std::string> all;
    size_t pos = 0;
    while (true) {
      size_t hit = s.find(sep, pos);
      if (hit == std::string::npos) break;
      all.push_back(s.substr(pos, hit - pos));
      pos = hit + sep.size();
    }
    all.push_back(s.substr(pos));
    size_t splits = all.size() - 1;
    if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= splits) {
      parts = std::move(all);
    } else if (!from_right) {
      size_t keep = static_cast<size_t>(maxsplit);
      for (size_t k = 0; k < keep; ++k) parts.push_back(all[k]);
      std::string rest = all[keep];
      for (size_t k = keep + 1; k < all.size(); ++k) rest += sep + all[k];
      parts.push_back(rest);
    } else {
      size_t keep = static_cast<size_t>(maxsplit);
      std::string rest = all[0];
      for (size_t k = 1; k < all.size() - keep; ++k) rest += sep + all[k];
      parts.push_back(rest);
      for (size_t k = all.size() - keep; k < all.size(); ++k)
        parts.push_back(all[k]);
    }
  }
  Value::List out;
  for (auto& p : parts) out.emplace_back(std::move(p));
  return Value::MakeList(std::move(out));
}

// The byte range of s[start:end] (code points, Python's slice rules) from
// the optional arguments `first` and `first + 1` (int or None). `valid` is
// false when start lies past the end, where Python's find answers -1 and
// startswith False, even for an empty needle.
struct ByteRange {
  size_t begin = 0, end = 0;
  int64_t first_cp = 0;  // the code point index of `begin`
  bool valid = true;
};
StatusOr<ByteRange> SliceArgs(const std::string& s, CallArgs& a, size_t first,
                              const std::string& fn) {
  std::vector<size_t> at;  // byte offset of each code point, then the size
  for (size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) at.push_back(i);
  }
  const int64_t n = static_cast<int64_t>(at.size());
  at.push_back(s.size());
  int64_t idx[2] = {0, n};
  for (size_t k = 0; k < 2; ++k) {
    const Value* v = Arg(a, first + k, k == 0 ? "start" : "end");
    if (v == nullptr || v->is_none()) continue;
    if (!v->is_int()) return TypeError(fn + ": slice indices must be integers");
    idx[k] = v->integer();
  }
  ByteRange r;
  for (int64_t& i : idx) {
    if (i < 0) i = std::max<int64_t>(0, i + n);
  }
  r.valid = idx[0] <= n;
  idx[0] = std::min(idx[0], n);
  idx[1] = std::max(idx[0], std::min(idx[1], n));
  r.begin = at[static_cast<size_t>(idx[0])];
  r.end = at[static_cast<size_t>(idx[1])];
  r.first_cp = idx[0];
  return r;
}

// Python's str.title() case rule: a cased character. ASCII letters and the
// Latin, Greek and Cyrillic letter blocks (whose case is not mapped: see
// AsciiUpper), so that "héllo" stays one word.
bool IsCased(uint32_t cp) {
  if (cp < 0x80) return std::isalpha(static_cast<int>(cp)) != 0;
  return (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) ||
         (cp >= 0x370 && cp <= 0x52F) || (cp >= 0x1E00 && cp <= 0x1FFF);
}

StatusOr<Value> PrefixTest(const std::string& whole, CallArgs& a, bool ends) {
  const std::string fn = ends ? "endswith" : "startswith";
  ASSIGN_OR_RETURN(ByteRange r, SliceArgs(whole, a, 1, fn));
  if (!r.valid) return Value(false);
  const std::string s = whole.substr(r.begin, r.end - r.begin);
  ASSIGN_OR_RETURN(const Value* p,
                   Required(a, 0, "prefix", fn));
  std::vector<Value> cands;
  if (p->is_tuple()) {
    cands = p->list();
  } else {
    cands.push_back(*p);
  }
  for (const Value& c : cands) {
    if (!c.is_string())
      return TypeError("startswith/endswith need str or a tuple of str");
    const std::string& x = c.str();
    if (x.size() > s.size()) continue;
    if (ends ? s.compare(s.size() - x.size(), x.size(), x) == 0
             : s.compare(0, x.size(), x) == 0) {
      return Value(true);
    }
  }
  return Value(false);
}

// str.format with positional {} / {0} and named {name} fields (no specs).
StatusOr<Value> Format(const std::string& s, CallArgs& a) {
  std::string out;
  size_t auto_idx = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '{' && i + 1 < s.size() && s[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    if (c == '}' && i + 1 < s.size() && s[i + 1] == '}') {
      out += '}';
      ++i;
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    size_t close = s.find('}', i);
    if (close == std::string::npos)
      return InvalidArgumentError(
          "ValueError: Single '{' encountered in format string");
    std::string field = s.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      return UnimplementedError("format specs in str.format are not supported");
    }
    const Value* v = nullptr;
    if (field.empty()) {
      v = auto_idx < a.args.size() ? &a.args[auto_idx] : nullptr;
      ++auto_idx;
    } else if (std::all_of(field.begin(), field.end(), ::isdigit)) {
      size_t k = std::stoul(field);
      v = k < a.args.size() ? &a.args[k] : nullptr;
    } else {
      v = a.Kwarg(field);
    }
    if (v == nullptr)
      return InvalidArgumentError("format: missing argument '" + field + "'");
    out += PyStr(*v);
    i = close;
  }
  return Value(std::move(out));
}

// str.title(): the first cased letter after an uncased one upper, the rest
// lower (ASCII letters only change case).
std::string StrTitle(const std::string& s) {
  std::string r;
  bool prev_cased = false;
  for (uint32_t cp : DecodeUtf8(s)) {
    const bool cased = IsCased(cp);
    if (cp < 0x80 && cased) {
      cp = static_cast<uint32_t>(prev_cased ? std::tolower(static_cast<int>(cp))
                                            : std::toupper(static_cast<int>(cp)));
    }
    AppendUtf8(cp, &r);
    prev_cased = cased;
  }
  return r;
}

StatusOr<Value> StrReplace(const std::string& s, CallArgs& a) {
  ASSIGN_OR_RETURN(std::string from, StrArg(a, 0, "old", "replace"));
  ASSIGN_OR_RETURN(std::string to, StrArg(a, 1, "new", "replace"));
  const Value* count_v = Arg(a, 2, "count");
  int64_t count = count_v && count_v->is_int() ? count_v->integer() : -1;
  if (from.empty())
    return UnimplementedError("str.replace with an empty pattern");
  return Value(PyReplace(s, from, to, count));
}

// str.find, str.rfind and str.index: a code-point position, -1 (or a
// ValueError for index) when absent.
StatusOr<Value> StrFind(const std::string& s, CallArgs& a, const std::string& name) {
  ASSIGN_OR_RETURN(std::string sub, StrArg(a, 0, "sub", name));
  ASSIGN_OR_RETURN(ByteRange br, SliceArgs(s, a, 1, name));
  const std::string_view t =
      std::string_view(s).substr(br.begin, br.end - br.begin);
  const size_t hit = !br.valid ? std::string::npos
                     : name == "rfind" ? t.rfind(sub) : t.find(sub);
  if (hit == std::string::npos) {
    if (name == "index")
      return InvalidArgumentError("ValueError: substring not found");
    return Value(-1);
  }
  return Value(br.first_cp +
               static_cast<int64_t>(CodePointCount(t.substr(0, hit))));
}

StatusOr<Value> StrCount(const std::string& s, CallArgs& a) {
  ASSIGN_OR_RETURN(std::string sub, StrArg(a, 0, "sub", "count"));
  ASSIGN_OR_RETURN(ByteRange br, SliceArgs(s, a, 1, "count"));
  if (!br.valid) return Value(int64_t{0});
  const std::string_view t =
      std::string_view(s).substr(br.begin, br.end - br.begin);
  if (sub.empty()) return Value(static_cast<int64_t>(CodePointCount(t) + 1));
  int64_t n = 0;
  for (size_t pos = t.find(sub); pos != std::string::npos;
       pos = t.find(sub, pos + sub.size()))
    ++n;
  return Value(n);
}

// str.join(iterable): every item must be a str.
StatusOr<Value> StrJoin(const std::string& s, CallArgs& a) {
  ASSIGN_OR_RETURN(const Value* it, Required(a, 0, "iterable", "join"));
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(*it));
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string())
      return TypeError("sequence item: expected str instance");
    if (i > 0) out += s;
    out += items[i].str();
  }
  return Value(std::move(out));
}

}  // namespace

StatusOr<Value> StringMethod(const Value& self, const std::string& name,
                             CallArgs& a) {
  const std::string& s = self.str();
  auto chars = [&]() -> std::optional<std::string> {
    const Value* c = Arg(a, 0, "chars");
    if (c == nullptr || c->is_none()) return std::nullopt;
    return PyStr(*c);
  };
  if (name == "strip") return Value(PyStrip(s, chars(), true, true));
  if (name == "lstrip") return Value(PyStrip(s, chars(), true, false));
  if (name == "rstrip") return Value(PyStrip(s, chars(), false, true));
  if (name == "startswith") return PrefixTest(s, a, false);
  if (name == "endswith") return PrefixTest(s, a, true);
  if (name == "split") return Split(s, a, false);
  if (name == "rsplit") return Split(s, a, true);
  if (name == "upper") return Value(AsciiUpper(s));
  if (name == "lower") return Value(AsciiLower(s));
  if (name == "capitalize") {
    std::string r = AsciiLower(s);
    if (!r.empty())
      r[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(r[0])));
    return Value(std::move(r));
  }
  if (name == "title") return Value(StrTitle(s));
  if (name == "replace") return StrReplace(s, a);
  if (name == "find" || name == "rfind" || name == "index") return StrFind(s, a, name);
  if (name == "count") return StrCount(s, a);
  if (name == "join") return StrJoin(s, a);
  if (name == "format") return Format(s, a);
  if (name == "splitlines") {
    Value::List out;
    for (auto& l : PySplitLines(s)) out.emplace_back(std::move(l));
    return Value::MakeList(std::move(out));
  }
  auto all = [&](int (*pred)(int)) {
    return Value(!s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
      return pred(static_cast<unsigned char>(c)) != 0;
    }));
  };
  if (name == "isdigit") return all(::isdigit);
  if (name == "isalpha") return all(::isalpha);
  if (name == "isalnum") return all(::isalnum);
  if (name == "isspace") {
    const std::vector<uint32_t> cps = DecodeUtf8(s);
    return Value(!cps.empty() && std::all_of(cps.begin(), cps.end(),
                                             IsPyWhitespace));
  }
  if (name == "islower") return Value(AsciiLower(s) == s && AsciiUpper(s) != s);
  if (name == "isupper") return Value(AsciiUpper(s) == s && AsciiLower(s) != s);
  return TypeError("unknown str method " + name);
}

bool IsStringMethod(const std::string& name) {
  return StringMethods().count(name) > 0;
}

}  // namespace weft::chat::internal
