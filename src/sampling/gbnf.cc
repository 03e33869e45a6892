#include "sampling/gbnf.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sampling/regex_grammar.h"

namespace weft::sampling {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

constexpr int kMaxNesting = 64;
constexpr int kMaxRepeat = 1000;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view s) : s_(s) {}

  StatusOr<std::shared_ptr<const Grammar>> Parse() {
    while (true) {
      SkipSpace();
      if (i_ >= s_.size()) break;
      const std::string name = Name();
      if (name.empty()) return Error("expected a rule name");
      SkipSpace();
      if (s_.substr(i_, 3) != "::=") return Error("expected ::= after '" + name + "'");
      i_ += 3;
      const int rule = RuleId(name);
      if (defined_[rule]) return InvalidArgumentError("gbnf: rule '" + name + "' defined twice");
      defined_[rule] = true;
      ASSIGN_OR_RETURN(GrammarAlts alts, Alternation(0));
      b_.Define(rule, std::move(alts));
    }
    const auto root = ids_.find("root");
    if (root == ids_.end() || !defined_[root->second]) {
      return InvalidArgumentError("gbnf: no 'root' rule");
    }
    for (const auto& [name, id] : ids_) {
      if (!defined_[id]) return InvalidArgumentError("gbnf: undefined rule '" + name + "'");
    }
    b_.SetRoot(root->second);
    auto g = std::move(b_).Build();
    if (!g.ok()) return InvalidArgumentError("gbnf: " + g.status().message());
    return g;
  }

 private:
  Status Error(const std::string& what) const {
    return InvalidArgumentError("gbnf: " + what + " at offset " + std::to_string(i_));
  }

  int RuleId(const std::string& name) {
    auto [it, added] = ids_.emplace(name, 0);
    if (added) {
      it->second = b_.NewRule(name);
      // Groups and repeats add anonymous rules in between: ids skip.
      defined_.resize(static_cast<size_t>(it->second) + 1, false);
    }
    return it->second;
  }

  void SkipSpace() {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i_;
      } else {
        break;
      }
    }
  }

  std::string Name() {
    const size_t start = i_;
    while (i_ < s_.size() && IsNameChar(s_[i_])) ++i_;
    return std::string(s_.substr(start, i_ - start));
  }

  // Whether a new rule (`name ::=`) starts at i_.
  bool AtRuleStart() {
    const size_t save = i_;
    const bool named = !Name().empty();
    SkipSpace();
    const bool yes = named && s_.substr(i_, 3) == "::=";
    i_ = save;
    return yes;
  }

  StatusOr<GrammarAlts> Alternation(int depth) {
    if (depth > kMaxNesting) return Error("groups nested too deeply");
    GrammarAlts alts;
    while (true) {
      GrammarSeq seq;
      while (true) {
        SkipSpace();
        if (i_ >= s_.size() || s_[i_] == '|' || s_[i_] == ')' || AtRuleStart()) break;
        ASSIGN_OR_RETURN(GrammarElement e, Atom(depth));
        ASSIGN_OR_RETURN(e, Postfix(e));
        seq.push_back(e);
        if (b_.TooLarge()) return Error("grammar is too large");
      }
      alts.push_back(std::move(seq));
      if (i_ < s_.size() && s_[i_] == '|') {
        ++i_;
        continue;
      }
      return alts;
    }
  }

  StatusOr<GrammarElement> Postfix(GrammarElement e) {
    while (i_ < s_.size()) {
      const char c = s_[i_];
      int min = 0, max = -1;
      if (c == '*' || c == '+' || c == '?') {
        min = c == '+' ? 1 : 0;
        max = c == '?' ? 1 : -1;
        ++i_;
      } else if (c == '{') {
        ++i_;
        auto number = [&](int* v) {
          SkipSpace();
          const size_t start = i_;
          long long x = 0;
          while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9' && x <= kMaxRepeat * 10) {
            x = x * 10 + (s_[i_++] - '0');
          }
          *v = static_cast<int>(x);
          SkipSpace();
          return i_ > start;
        };
        const bool has_min = number(&min);
        if (!has_min) min = 0;
        max = min;
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          if (!number(&max)) max = -1;
        } else if (!has_min) {
          return Error("bad repetition");
        }
        if (i_ >= s_.size() || s_[i_] != '}') return Error("expected }");
        ++i_;
      } else {
        return e;
      }
      if (min > kMaxRepeat || max > kMaxRepeat || (max >= 0 && max < min)) {
        return Error("repetition count out of range (at most " + std::to_string(kMaxRepeat) + ")");
      }
      e = b_.Repeat(e, min, max);
    }
    return e;
  }

  // One character of a literal or class at i_ (after a backslash, an escape).
  StatusOr<uint32_t> Char() {
    if (s_[i_] != '\\') {
      const auto c0 = static_cast<uint8_t>(s_[i_++]);
      int n = c0 >= 0xF0 ? 3 : c0 >= 0xE0 ? 2 : c0 >= 0xC0 ? 1 : 0;
      uint32_t cp = n == 3 ? c0 & 7 : n == 2 ? c0 & 15 : n == 1 ? c0 & 31 : c0;
      for (; n > 0 && i_ < s_.size(); --n) cp = (cp << 6) | (static_cast<uint8_t>(s_[i_++]) & 0x3F);
      return cp;
    }
    if (++i_ >= s_.size()) return Error("trailing backslash");
    const char c = s_[i_++];
    switch (c) {
      case 'n': return uint32_t{'\n'};
      case 'r': return uint32_t{'\r'};
      case 't': return uint32_t{'\t'};
      case '\\': case '"': case '\'': case '[': case ']': case '-': case '/':
        return static_cast<uint32_t>(c);
      case 'x': case 'u': case 'U': {
        const int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
          const char h = i_ < s_.size() ? s_[i_++] : 'g';
          const int d = (h >= '0' && h <= '9') ? h - '0'
                        : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                        : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
          if (d < 0) return Error(std::string("bad \\") + c + " escape");
          v = v * 16 + static_cast<uint32_t>(d);
        }
        if (v > 0x10FFFF) return Error("code point out of range");
        return v;
      }
      default:
        return Error(std::string("unknown escape \\") + c);
    }
  }

  StatusOr<GrammarElement> Atom(int depth) {
    const char c = s_[i_];
    if (c == '"') {
      ++i_;
      std::string bytes;
      while (i_ < s_.size() && s_[i_] != '"') {
        ASSIGN_OR_RETURN(uint32_t cp, Char());
        AppendUtf8(cp, &bytes);
      }
      if (i_ >= s_.size()) return Error("unterminated literal");
      ++i_;
      return b_.Group({b_.Literal(bytes)});
    }
    if (c == '[') {
      ++i_;
      const bool negate = i_ < s_.size() && s_[i_] == '^';
      if (negate) ++i_;
      Ranges r;
      while (i_ < s_.size() && s_[i_] != ']') {
        ASSIGN_OR_RETURN(uint32_t lo, Char());
        uint32_t hi = lo;
        if (i_ + 1 < s_.size() && s_[i_] == '-' && s_[i_ + 1] != ']') {
          ++i_;
          ASSIGN_OR_RETURN(hi, Char());
          if (hi < lo) return Error("bad class range");
        }
        r.push_back({lo, hi});
      }
      if (i_ >= s_.size()) return Error("unterminated character class");
      ++i_;
      if (negate) r = ComplementCodePoints(std::move(r));
      if (r.empty()) return Error("empty character class");
      return b_.Group(b_.CodePoints(r));
    }
    if (c == '.') {
      ++i_;
      return b_.Group(b_.CodePoints(ComplementCodePoints({})));
    }
    if (c == '(') {
      ++i_;
      ASSIGN_OR_RETURN(GrammarAlts alts, Alternation(depth + 1));
      if (i_ >= s_.size() || s_[i_] != ')') return Error("expected )");
      ++i_;
      return b_.Group(std::move(alts));
    }
    if (IsNameChar(c)) return b_.Ref(RuleId(Name()));
    if (c == '<') return Error("unsupported token reference <...>");
    if (c == '!') return Error("unsupported negation !");
    return Error(std::string("unexpected '") + c + "'");
  }

  std::string_view s_;
  size_t i_ = 0;
  GrammarBuilder b_;
  std::map<std::string, int> ids_;
  std::vector<bool> defined_;  // by rule id; named rules only are read
};

}  // namespace

StatusOr<std::shared_ptr<const Grammar>> CompileGbnf(std::string_view text) {
  return GbnfParser(text).Parse();
}

StatusOr<std::shared_ptr<const Grammar>> CompileChoice(const std::vector<std::string>& choices) {
  if (choices.empty()) return InvalidArgumentError("choice: the list is empty");
  GrammarBuilder b;
  GrammarAlts alts;
  for (const std::string& c : choices) alts.push_back(b.Literal(c));
  b.SetRoot(b.AddRule("root", std::move(alts)));
  return std::move(b).Build();
}

}  // namespace weft::sampling
