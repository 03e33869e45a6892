#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sampling/schema_grammar_internal.h"

namespace weft::sampling {

GrammarElement JsonParts::Ws() {
  if (!ws_) {
    const GrammarElement nl = b_->Repeat(b_->Bytes('\n', '\n'), 0, 1);
    ByteSet sp;
    sp.Add(' ');
    sp.Add('\t');
    const GrammarElement run = b_->Repeat(b_->Bytes(sp), 0, kSchemaMaxIndent);
    ws_ = b_->Ref(b_->AddRule("ws", {{nl, run}}));
  }
  return *ws_;
}

GrammarElement JsonParts::StringChar() {
  if (!char_) {
    GrammarAlts alts = b_->CodePoints({{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x10FFFF}});
    ByteSet esc;
    for (char c : std::string("\"\\/bfnrt")) esc.Add(static_cast<uint8_t>(c));
    alts.push_back({b_->Bytes('\\', '\\'), b_->Bytes(esc)});
    ByteSet hex;
    hex.AddRange('0', '9');
    hex.AddRange('a', 'f');
    hex.AddRange('A', 'F');
    const GrammarElement h = b_->Bytes(hex);
    alts.push_back({b_->Bytes('\\', '\\'), b_->Bytes('u', 'u'), h, h, h, h});
    char_ = b_->Ref(b_->AddRule("char", std::move(alts)));
  }
  return *char_;
}

GrammarElement JsonParts::String() {
  if (!string_) {
    const GrammarElement q = b_->Bytes('"', '"');
    string_ = b_->Ref(b_->AddRule("string", {{q, b_->Repeat(StringChar(), 0, -1), q}}));
  }
  return *string_;
}

GrammarElement JsonParts::Number() {
  if (!number_) {
    const GrammarElement digit = b_->Bytes('0', '9');
    const GrammarElement digits = b_->Repeat(digit, 1, -1);
    const GrammarElement intpart =
        b_->Group({{b_->Bytes('0', '0')}, {b_->Bytes('1', '9'), b_->Repeat(digit, 0, -1)}});
    const GrammarElement frac = b_->Repeat(b_->Group({{b_->Bytes('.', '.'), digits}}), 0, 1);
    ByteSet e, sign;
    e.Add('e');
    e.Add('E');
    sign.Add('+');
    sign.Add('-');
    const GrammarElement exp = b_->Repeat(
        b_->Group({{b_->Bytes(e), b_->Repeat(b_->Bytes(sign), 0, 1), digits}}), 0, 1);
    number_ = b_->Ref(b_->AddRule(
        "number", {{b_->Repeat(b_->Bytes('-', '-'), 0, 1), intpart, frac, exp}}));
  }
  return *number_;
}

GrammarAlts JsonParts::DigitRange(const std::string& lo, const std::string& hi) {
  const size_t n = lo.size();
  if (lo == hi) return {b_->Literal(lo)};
  const GrammarElement digit = b_->Bytes('0', '9');
  const std::string rest_lo = lo.substr(1), rest_hi = hi.substr(1);
  const auto u = [](char c) { return static_cast<uint8_t>(c); };
  if (rest_lo == std::string(n - 1, '0') && rest_hi == std::string(n - 1, '9')) {
    GrammarSeq seq = {b_->Bytes(u(lo[0]), u(hi[0]))};
    seq.insert(seq.end(), n - 1, digit);
    return {seq};
  }
  if (lo[0] == hi[0]) {
    return {{b_->Bytes(u(lo[0]), u(lo[0])), b_->Group(DigitRange(rest_lo, rest_hi))}};
  }
  GrammarAlts alts;
  alts.push_back({b_->Bytes(u(lo[0]), u(lo[0])),
                  b_->Group(DigitRange(rest_lo, std::string(n - 1, '9')))});
  if (hi[0] - lo[0] >= 2) {
    GrammarSeq seq = {b_->Bytes(u(lo[0] + 1), u(hi[0] - 1))};
    seq.insert(seq.end(), n - 1, digit);
    alts.push_back(seq);
  }
  alts.push_back({b_->Bytes(u(hi[0]), u(hi[0])),
                  b_->Group(DigitRange(std::string(n - 1, '0'), rest_hi))});
  return alts;
}

GrammarAlts JsonParts::NonNegative(int64_t lo, int64_t hi) {
  GrammarAlts alts;
  const size_t len0 = std::to_string(lo).size();
  const size_t len1 = hi < 0 ? len0 : std::to_string(hi).size();
  int64_t pow = 1;  // 10^(len - 1)
  for (size_t k = 1; k < len0; ++k) pow *= 10;
  for (size_t len = len0; len <= len1; ++len, pow *= 10) {
    const int64_t a = len == len0 ? lo : pow;
    const int64_t b = (hi >= 0 && len == len1) ? hi : pow * 10 - 1;
    for (GrammarSeq& s : DigitRange(std::to_string(a), std::to_string(b))) {
      alts.push_back(std::move(s));
    }
  }
  if (hi < 0) {  // every longer number
    alts.push_back({b_->Bytes('1', '9'),
                    b_->Repeat(b_->Bytes('0', '9'), static_cast<int>(len0), -1)});
  }
  return alts;
}

GrammarElement JsonParts::IntegerRange(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  GrammarAlts alts;
  if (!lo || *lo < 0) {
    const int64_t top = hi ? std::min<int64_t>(*hi, -1) : -1;  // the negatives' top
    if (!lo || *lo <= top) {
      for (GrammarSeq& s : NonNegative(-top, lo ? -*lo : -1)) {
        s.insert(s.begin(), b_->Bytes('-', '-'));
        alts.push_back(std::move(s));
      }
    }
  }
  if (!hi || *hi >= 0) {
    for (GrammarSeq& s : NonNegative(lo ? std::max<int64_t>(*lo, 0) : 0, hi ? *hi : -1)) {
      alts.push_back(std::move(s));
    }
  }
  return b_->Group(std::move(alts));
}

GrammarElement JsonParts::KeyNotIn(const std::vector<std::string>& names) {
  if (names.empty()) return String();
  struct Node {
    std::map<uint8_t, int> next;
    bool terminal = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    int at = 0;
    for (char c : name) {
      const auto byte = static_cast<uint8_t>(c);
      auto it = trie[at].next.find(byte);
      if (it == trie[at].next.end()) {
        trie.emplace_back();
        it = trie[at].next.emplace(byte, static_cast<int>(trie.size()) - 1).first;
      }
      at = it->second;
    }
    trie[at].terminal = true;
  }
  const GrammarElement q = b_->Bytes('"', '"');
  const GrammarElement tail = b_->Ref(b_->AddRule("key-tail", {{b_->Repeat(StringChar(), 0, -1), q}}));
  std::vector<int> rules;
  for (size_t i = 0; i < trie.size(); ++i) rules.push_back(b_->NewRule("key"));
  for (size_t i = 0; i < trie.size(); ++i) {
    GrammarAlts alts;
    if (!trie[i].terminal) alts.push_back({q});
    ByteSet other;
    other.AddRange(0x20, 0x7E);
    bool non_ascii_child = false;
    for (auto [byte, child] : trie[i].next) {
      alts.push_back({b_->Bytes(byte, byte), b_->Ref(rules[child])});
      other.w[byte >> 6] &= ~(uint64_t{1} << (byte & 63));
      non_ascii_child |= byte >= 0x80;
    }
    other.w['"' >> 6] &= ~(uint64_t{1} << ('"' & 63));
    other.w['\\' >> 6] &= ~(uint64_t{1} << ('\\' & 63));
    alts.push_back({b_->Bytes(other), tail});
    if (!non_ascii_child) {
      alts.push_back({b_->Group(b_->CodePoints({{0x80, 0x10FFFF}})), tail});
    }
    b_->Define(rules[i], std::move(alts));
  }
  return b_->Group({{q, b_->Ref(rules[0])}});
}

GrammarElement JsonParts::AnyValue() {
  if (value_) return *value_;
  const int value = b_->NewRule("value");
  value_ = b_->Ref(value);
  const GrammarElement ws = Ws();
  const GrammarElement comma = b_->Bytes(',', ',');
  const GrammarElement member =
      b_->Group({{String(), ws, b_->Bytes(':', ':'), ws, b_->Ref(value)}});
  auto container = [&](char open, char close, GrammarElement item) {
    const GrammarElement c = b_->Bytes(static_cast<uint8_t>(close), static_cast<uint8_t>(close));
    const GrammarElement more = b_->Repeat(b_->Group({{ws, comma, ws, item}}), 0, -1);
    return b_->Group({{b_->Bytes(static_cast<uint8_t>(open), static_cast<uint8_t>(open)), ws,
                       b_->Group({{c}, {item, more, ws, c}})}});
  };
  const GrammarElement object = container('{', '}', member);
  const GrammarElement array = container('[', ']', *value_);
  b_->Define(value, {{object}, {array}, {String()}, {Number()}, b_->Literal("true"),
                     b_->Literal("false"), b_->Literal("null")});
  return *value_;
}

StatusOr<std::string> FormatRegex(const std::string& f) {
  const std::string date =
      R"(\d{4}-((0[13578]|1[02])-(0[1-9]|[12]\d|3[01])|(0[469]|11)-(0[1-9]|[12]\d|30)|)"
      R"(02-(0[1-9]|1\d|2[0-8])))";
  const std::string time =
      R"(([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d))";
  if (f == "date") return date;
  if (f == "time") return time;
  if (f == "date-time") return date + "T" + time;
  if (f == "uuid") return R"([0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12})";
  if (f == "email") return R"([A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+)";
  return InvalidArgumentError("json_schema: unsupported format '" + f + "'");
}

}  // namespace weft::sampling
