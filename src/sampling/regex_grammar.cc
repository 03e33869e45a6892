#include "sampling/regex_grammar.h"

#include <string>

#include "util/strings.h"

namespace weft::sampling {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxNesting = 64;

Status Unsupported(std::string what) {
  return InvalidArgumentError("regex: unsupported " + what);
}

// Decodes one UTF-8 character at s[*i] (a lone invalid byte reads as itself).
uint32_t NextChar(std::string_view s, size_t* i) {
  const auto c0 = static_cast<uint8_t>(s[(*i)++]);
  int n = c0 >= 0xF0 ? 3 : c0 >= 0xE0 ? 2 : c0 >= 0xC0 ? 1 : 0;
  uint32_t cp = n == 3 ? c0 & 7 : n == 2 ? c0 & 15 : n == 1 ? c0 & 31 : c0;
  for (; n > 0 && *i < s.size(); --n) cp = (cp << 6) | (static_cast<uint8_t>(s[(*i)++]) & 0x3F);
  return cp;
}

class RegexParser {
 public:
  RegexParser(GrammarBuilder* b, std::string_view s, bool json) : b_(b), s_(s), json_(json) {}

  StatusOr<GrammarAlts> Alternation(int depth) {
    if (depth > kMaxNesting) return InvalidArgumentError("regex: groups nested too deeply");
    GrammarAlts alts;
    while (true) {
      ASSIGN_OR_RETURN(GrammarSeq seq, Sequence(depth));
      alts.push_back(std::move(seq));
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        continue;
      }
      return alts;
    }
  }
  bool AtEnd() const { return i_ >= s_.size(); }
  size_t pos() const { return i_; }

 private:
  StatusOr<GrammarSeq> Sequence(int depth) {
    GrammarSeq seq;
    while (i_ < s_.size() && s_[i_] != '|' && s_[i_] != ')') {
      ASSIGN_OR_RETURN(GrammarElement atom, Atom(depth));
      ASSIGN_OR_RETURN(atom, Quantified(atom));
      seq.push_back(atom);
      if (b_->TooLarge()) return InvalidArgumentError("regex: pattern is too large");
    }
    return seq;
  }

  // Reads {m}, {m,}, {m,n} at i_; false (i_ unchanged) if it is not one.
  bool Braces(int* min, int* max) {
    size_t j = i_ + 1;
    auto number = [&](int* v) {
      const size_t start = j;
      long long x = 0;
      while (j < s_.size() && s_[j] >= '0' && s_[j] <= '9' && x <= kMaxRegexRepeat * 10) {
        x = x * 10 + (s_[j++] - '0');
      }
      *v = static_cast<int>(x);
      return j > start;
    };
    if (!number(min)) return false;
    *max = *min;
    if (j < s_.size() && s_[j] == ',') {
      ++j;
      if (!number(max)) *max = -1;
    }
    if (j >= s_.size() || s_[j] != '}') return false;
    i_ = j + 1;
    return true;
  }

  StatusOr<GrammarElement> Quantified(GrammarElement atom) {
    while (i_ < s_.size()) {
      int min, max;
      const char c = s_[i_];
      if (c == '*' || c == '+' || c == '?') {
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
        ++i_;
      } else if (c != '{' || !Braces(&min, &max)) {
        return atom;
      }
      if (min > kMaxRegexRepeat || max > kMaxRegexRepeat || (max >= 0 && max < min)) {
        return InvalidArgumentError("regex: repetition count out of range (at most " +
                                    std::to_string(kMaxRegexRepeat) + ")");
      }
      if (i_ < s_.size() && s_[i_] == '?') ++i_;  // lazy: same language
      if (i_ < s_.size() && s_[i_] == '+') return Unsupported("possessive quantifier");
      atom = b_->Repeat(atom, min, max);
    }
    return atom;
  }

  StatusOr<GrammarElement> Group(int depth) {
    ++i_;  // '('
    if (s_.substr(i_, 1) == "?") {
      const std::string_view rest = s_.substr(i_);
      if (rest.starts_with("?:")) {
        i_ += 2;
      } else if (rest.starts_with("?P<") || (rest.starts_with("?<") && rest.size() > 2 &&
                                             rest[2] != '=' && rest[2] != '!')) {
        const size_t close = s_.find('>', i_);
        if (close == std::string_view::npos) return InvalidArgumentError("regex: bad group name");
        i_ = close + 1;
      } else if (rest.starts_with("?=") || rest.starts_with("?!") || rest.starts_with("?<")) {
        return Unsupported("lookaround (?" + std::string(rest.substr(1, rest[1] == '<' ? 2 : 1)) +
                           "...)");
      } else {
        return Unsupported("group syntax (" + std::string(rest.substr(0, 3)) + "...");
      }
    }
    ASSIGN_OR_RETURN(GrammarAlts alts, Alternation(depth + 1));
    if (i_ >= s_.size() || s_[i_] != ')') return InvalidArgumentError("regex: missing )");
    ++i_;
    return b_->Group(std::move(alts));
  }

  StatusOr<GrammarElement> Atom(int depth) {
    const char c = s_[i_];
    switch (c) {
      case '(':
        return Group(depth);
      case '[': {
        ASSIGN_OR_RETURN(Ranges r, Class());
        return Chars(r);
      }
      case '.':
        ++i_;
        return Chars(ComplementCodePoints({{'\n', '\n'}}));
      case '\\': {
        Ranges r;
        RETURN_IF_ERROR(Escape(&r));
        return Chars(r);
      }
      case '^':
      case '$':
        return Unsupported(std::string("anchor ") + c + " inside the pattern");
      case '*':
      case '+':
      case '?':
        return InvalidArgumentError(std::string("regex: nothing to repeat before ") + c);
      default: {
        const uint32_t cp = NextChar(s_, &i_);
        return Chars({{cp, cp}});
      }
    }
  }

  GrammarElement Chars(const Ranges& r) { return b_->Group(CharsetAlts(b_, r, json_)); }

  // One character of a class, or an escape standing for a set (\d, \w,
  // ...): its ranges.
  Status ClassAtom(Ranges* out) {
    if (s_[i_] == '\\') return Escape(out);
    const uint32_t cp = NextChar(s_, &i_);
    *out = {{cp, cp}};
    return OkStatus();
  }

  // An escape at i_ ('\\'), inside a class or not, as code point ranges.
  Status Escape(Ranges* out) {
    if (i_ + 1 >= s_.size()) return InvalidArgumentError("regex: trailing backslash");
    const char c = s_[i_ + 1];
    i_ += 2;
    const Ranges digit = {{'0', '9'}};
    const Ranges word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    const Ranges space = {{'\t', '\r'}, {' ', ' '}};
    switch (c) {
      case 'd': *out = digit; return OkStatus();
      case 'D': *out = ComplementCodePoints(digit); return OkStatus();
      case 'w': *out = word; return OkStatus();
      case 'W': *out = ComplementCodePoints(word); return OkStatus();
      case 's': *out = space; return OkStatus();
      case 'S': *out = ComplementCodePoints(space); return OkStatus();
      case 'n': *out = {{'\n', '\n'}}; return OkStatus();
      case 't': *out = {{'\t', '\t'}}; return OkStatus();
      case 'r': *out = {{'\r', '\r'}}; return OkStatus();
      case 'f': *out = {{'\f', '\f'}}; return OkStatus();
      case 'v': *out = {{'\v', '\v'}}; return OkStatus();
      case '0': *out = {{0, 0}}; return OkStatus();
      case 'x':
      case 'u': {
        const size_t n = c == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (size_t k = 0; k < n; ++k) {
          const int h = i_ + k < s_.size() ? HexDigit(s_[i_ + k]) : -1;
          if (h < 0) return InvalidArgumentError(std::string("regex: bad \\") + c + " escape");
          v = v * 16 + static_cast<uint32_t>(h);
        }
        i_ += n;
        *out = {{v, v}};
        return OkStatus();
      }
      default:
        break;
    }
    if (c >= '1' && c <= '9') return Unsupported("backreference \\" + std::string(1, c));
    if (c == 'k') return Unsupported("backreference \\k");
    if (c == 'b' || c == 'B') return Unsupported(std::string("word boundary \\") + c);
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      return Unsupported(std::string("escape \\") + c);
    }
    --i_;
    const uint32_t cp = NextChar(s_, &i_);
    *out = {{cp, cp}};
    return OkStatus();
  }

  StatusOr<Ranges> Class() {
    ++i_;  // '['
    bool negate = false;
    if (i_ < s_.size() && s_[i_] == '^') {
      negate = true;
      ++i_;
    }
    Ranges r;
    bool first = true;
    while (true) {
      if (i_ >= s_.size()) return InvalidArgumentError("regex: missing ]");
      if (s_[i_] == ']' && !first) break;
      first = false;
      if (s_.substr(i_).starts_with("[:")) return Unsupported("POSIX class [:...:]");
      Ranges one;
      RETURN_IF_ERROR(ClassAtom(&one));
      if (one.size() == 1 && one[0].first == one[0].second && i_ + 1 < s_.size() &&
          s_[i_] == '-' && s_[i_ + 1] != ']') {
        ++i_;
        Ranges hi;
        RETURN_IF_ERROR(ClassAtom(&hi));
        if (hi.size() != 1 || hi[0].first != hi[0].second || hi[0].first < one[0].first) {
          return InvalidArgumentError("regex: bad class range");
        }
        one[0].second = hi[0].first;
      }
      r.insert(r.end(), one.begin(), one.end());
    }
    ++i_;  // ']'
    if (negate) r = ComplementCodePoints(std::move(r));
    return r;
  }

  GrammarBuilder* b_;
  std::string_view s_;
  bool json_;
  size_t i_ = 0;
};

// The JSON escape a string must use for code point cp, or "" if none.
std::string JsonEscapeOf(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: break;
  }
  if (cp >= 0x20) return "";
  const char* d = "0123456789abcdef";
  return std::string("\\u00") + d[cp >> 4] + d[cp & 15];
}

}  // namespace

GrammarAlts CharsetAlts(GrammarBuilder* b, const Ranges& cps, bool json_string) {
  if (!json_string) return b->CodePoints(cps);
  Ranges plain;
  GrammarAlts escaped;
  for (auto [lo, hi] : cps) {
    // Control characters, '"' and '\\' take their escapes; the rest as is.
    for (uint32_t cp = lo; cp <= hi && cp < 0x20; ++cp) escaped.push_back(b->Literal(JsonEscapeOf(cp)));
    for (uint32_t cp : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (lo <= cp && cp <= hi) escaped.push_back(b->Literal(JsonEscapeOf(cp)));
    }
    lo = std::max<uint32_t>(lo, 0x20);
    for (uint32_t cut : {uint32_t{'"'}, uint32_t{'\\'}}) {
      if (lo <= cut && cut <= hi) {
        if (lo < cut) plain.push_back({lo, cut - 1});
        lo = cut + 1;
      }
    }
    if (lo <= hi) plain.push_back({lo, hi});
  }
  GrammarAlts alts = plain.empty() ? GrammarAlts{} : b->CodePoints(plain);
  alts.insert(alts.end(), escaped.begin(), escaped.end());
  return alts;
}

StatusOr<GrammarElement> AddRegex(GrammarBuilder* b, std::string_view pattern,
                                  bool json_string, bool unanchored) {
  bool start = false, end = false;
  if (pattern.starts_with("^")) {
    start = true;
    pattern.remove_prefix(1);
  }
  if (pattern.ends_with("$") && !(pattern.size() >= 2 && pattern[pattern.size() - 2] == '\\')) {
    end = true;
    pattern.remove_suffix(1);
  }
  RegexParser p(b, pattern, json_string);
  ASSIGN_OR_RETURN(GrammarAlts alts, p.Alternation(0));
  if (!p.AtEnd()) return InvalidArgumentError("regex: unbalanced ) at " + std::to_string(p.pos()));
  GrammarSeq seq;
  const GrammarElement any =
      b->Repeat(b->Group(CharsetAlts(b, ComplementCodePoints({}), json_string)), 0, -1);
  if (unanchored && !start) seq.push_back(any);
  seq.push_back(b->Group(std::move(alts)));
  if (unanchored && !end) seq.push_back(any);
  return b->Group({std::move(seq)});
}

StatusOr<std::shared_ptr<const Grammar>> CompileRegex(std::string_view pattern) {
  GrammarBuilder b;
  ASSIGN_OR_RETURN(GrammarElement e, AddRegex(&b, pattern, false, false));
  b.SetRoot(b.AddRule("root", {{e}}));
  return std::move(b).Build();
}

}  // namespace weft::sampling
