#include "chat/lexer.h"

#include <cstring>

#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

Status LexError(int line, const std::string& msg) {
  return InvalidArgumentError(
      StrFormat("template syntax error at line %d: %s", line, msg.c_str()));
}

int CountNewlines(std::string_view s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

// Length in bytes of the Python-whitespace run starting at `pos`.
size_t WhitespaceRun(std::string_view s, size_t pos) {
  size_t p = pos;
  while (p < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[p]);
    if (c < 0x80) {
      if (!IsPyWhitespace(c)) break;
      ++p;
      continue;
    }
    // Decode one multi-byte code point.
    size_t len = (c >> 5) == 6    ? 2
                 : (c >> 4) == 14 ? 3
                 : (c >> 3) == 30 ? 4
                                  : 1;
    std::vector<uint32_t> cp = DecodeUtf8(s.substr(p, len));
    if (cp.size() != 1 || !IsPyWhitespace(cp[0])) break;
    p += len;
  }
  return p - pos;
}

bool IsAllWhitespace(std::string_view s) {
  return !s.empty() && WhitespaceRun(s, 0) == s.size();
}

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// Python's "unicode-escape" decoding of a string literal body.
StatusOr<std::string> Unescape(std::string_view body, int line) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out += c;
      continue;
    }
    char e = body[++i];
    switch (e) {
      case '\n':
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          int h = i + 1 + k < body.size() ? HexDigit(body[i + 1 + k]) : -1;
          if (h < 0)
            return LexError(
                line, "truncated \\" + std::string(1, e) + " escape in string");
          cp = cp * 16 + static_cast<uint32_t>(h);
        }
        if (cp > 0x10FFFF) return LexError(line, "illegal Unicode character");
        i += n;
        AppendUtf8(cp, &out);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          uint32_t cp = static_cast<uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' &&
                          body[i + 1] <= '7';
               ++k) {
            cp = cp * 8 + static_cast<uint32_t>(body[++i] - '0');
          }
          AppendUtf8(cp, &out);
        } else if (e == 'N') {
          return LexError(line, "\\N{...} escapes are not supported");
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

// Matches Python's digit run with single '_' separators: (\d+_)*\d+
size_t DigitRun(std::string_view s, size_t p) {
  size_t start = p;
  while (p < s.size() && IsDigit(s[p])) {
    ++p;
    if (p + 1 < s.size() && s[p] == '_' && IsDigit(s[p + 1])) ++p;
  }
  return p - start;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  StatusOr<std::vector<Token>> Run() {
    size_t pos = 0;
    while (pos < src_.size()) {
      // Earliest tag opener.
      size_t open = src_.find('{', pos);
      while (open != std::string::npos &&
             (open + 1 >= src_.size() ||
              std::strchr("{%#", src_[open + 1]) == nullptr)) {
        open = src_.find('{', open + 1);
      }
      if (open == std::string::npos) {
        Emit(TokenType::kData, src_.substr(pos));
        break;
      }
      char kind = src_[open + 1];
      size_t after = open + 2;
      char sign = 0;
      if (after < src_.size() && (src_[after] == '-' || src_[after] == '+')) {
        sign = src_[after];
        ++after;
      }
      std::string text = src_.substr(pos, open - pos);
      bool line_starting = pos == 0 || src_[pos - 1] == '\n';
      ApplyLeftStrip(&text, sign, kind != '{', line_starting);
      Emit(TokenType::kData, text);
      line_ += CountNewlines(text) + pending_newlines_;
      pending_newlines_ = 0;

      if (kind == '#') {
        ASSIGN_OR_RETURN(pos, Comment(after));
        continue;
      }
      if (kind == '%') {
        size_t raw_body = 0;
        if (MatchRaw(after, &raw_body)) {
          ASSIGN_OR_RETURN(pos, Raw(raw_body));
          continue;
        }
      }
      ASSIGN_OR_RETURN(pos, Tag(kind, after));
    }
    tokens_.push_back(Token{TokenType::kEof, "", line_});
    return std::move(tokens_);
  }

 private:
  void Emit(TokenType type, std::string text) {
    if (type == TokenType::kData && text.empty()) return;
    tokens_.push_back(Token{type, std::move(text), line_});
  }

  // `-` strips all whitespace before the tag; otherwise lstrip_blocks strips
  // the spaces between the line start and a block/comment tag.
  void ApplyLeftStrip(std::string* text, char sign, bool lstrip_kind,
                      bool line_starting) {
    if (sign == '-') {
      std::string stripped = PyStrip(*text, std::nullopt, false, true);
      pending_newlines_ =
          CountNewlines(std::string_view(*text).substr(stripped.size()));
      *text = std::move(stripped);
      return;
    }
    if (sign == '+' || !lstrip_kind) return;
    size_t nl = text->rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) &&
        IsAllWhitespace(std::string_view(*text).substr(l_pos))) {
      text->resize(l_pos);
    }
  }

  // Block/comment end with whitespace control at `p` ("%}" or "#}" in
  // `end`); returns the position after it or npos.
  size_t MatchBlockEnd(size_t p, const char* end) {
    if (src_.compare(p, 3, std::string("+") + end) == 0) return p + 3;
    if (src_.compare(p, 3, std::string("-") + end) == 0) {
      return p + 3 + WhitespaceRun(src_, p + 3);
    }
    if (src_.compare(p, 2, end) == 0) {
      return p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n');
    }
    return std::string::npos;
  }

  StatusOr<size_t> Comment(size_t p) {
    for (; p < src_.size(); ++p) {
      size_t end = MatchBlockEnd(p, "#}");
      if (end != std::string::npos) {
        line_ += CountNewlines(std::string_view(src_).substr(p, end - p));
        return end;
      }
      line_ += src_[p] == '\n';
    }
    return LexError(line_, "Missing end of comment tag");
  }

  // {% raw %}: `p` is after "{%" and its sign.
  bool MatchRaw(size_t p, size_t* body) {
    p += WhitespaceRun(src_, p);
    if (src_.compare(p, 3, "raw") != 0) return false;
    p += 3;
    p += WhitespaceRun(src_, p);
    if (src_.compare(p, 3, "-%}") == 0) {
      *body = p + 3 + WhitespaceRun(src_, p + 3);
      return true;
    }
    if (src_.compare(p, 2, "%}") == 0) {
      *body = p + 2;
      return true;
    }
    return false;
  }

  StatusOr<size_t> Raw(size_t p) {
    for (size_t q = p; q + 1 < src_.size(); ++q) {
      if (src_[q] != '{' || src_[q + 1] != '%') continue;
      size_t r = q + 2;
      char sign = 0;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+'))
        sign = src_[r++];
      r += WhitespaceRun(src_, r);
      if (src_.compare(r, 6, "endraw") != 0) continue;
      r += 6;
      r += WhitespaceRun(src_, r);
      size_t end = MatchBlockEnd(r, "%}");
      if (end == std::string::npos) continue;
      std::string text = src_.substr(p, q - p);
      bool line_starting = p == 0 || src_[p - 1] == '\n';
      ApplyLeftStrip(&text, sign, true, line_starting);
      Emit(TokenType::kData, text);
      line_ += CountNewlines(std::string_view(src_).substr(p, end - p));
      pending_newlines_ = 0;
      return end;
    }
    return LexError(line_, "Missing end of raw directive");
  }

  StatusOr<size_t> Tag(char kind, size_t p) {
    bool block = kind == '%';
    Emit(block ? TokenType::kBlockBegin : TokenType::kVarBegin, "");
    std::vector<char> balance;
    while (true) {
      if (p >= src_.size()) {
        return LexError(line_, block ? "unexpected end of template, expected "
                                       "end of block statement"
                                     : "unexpected end of template, expected "
                                       "end of print statement");
      }
      if (balance.empty()) {
        size_t end = std::string::npos;
        if (block) {
          end = MatchBlockEnd(p, "%}");
        } else if (src_.compare(p, 3, "-}}") == 0) {
          end = p + 3 + WhitespaceRun(src_, p + 3);
        } else if (src_.compare(p, 2, "}}") == 0) {
          end = p + 2;
        }
        if (end != std::string::npos) {
          Emit(block ? TokenType::kBlockEnd : TokenType::kVarEnd, "");
          line_ += CountNewlines(std::string_view(src_).substr(p, end - p));
          return end;
        }
      }
      size_t ws = WhitespaceRun(src_, p);
      if (ws > 0) {
        line_ += CountNewlines(std::string_view(src_).substr(p, ws));
        p += ws;
        continue;
      }
      char c = src_[p];
      if (IsDigit(c)) {
        RETURN_IF_ERROR(Number(&p));
        continue;
      }
      if (IsNameStart(c)) {
        size_t q = p;
        while (q < src_.size() && IsNameChar(src_[q])) ++q;
        Emit(TokenType::kName, src_.substr(p, q - p));
        p = q;
        continue;
      }
      if (c == '\'' || c == '"') {
        RETURN_IF_ERROR(String(&p));
        continue;
      }
      static const char* kOps2[] = {"**", "//", "==", "!=", ">=", "<="};
      std::string op;
      for (const char* o : kOps2) {
        if (src_.compare(p, 2, o) == 0) op = o;
      }
      if (op.empty() && std::strchr("+-/*%~[](){}=><.:|,;", c) != nullptr) {
        op = std::string(1, c);
      }
      if (op.empty()) {
        return LexError(line_, StrFormat("unexpected char '%s'",
                                         CEscape(std::string(1, c)).c_str()));
      }
      if (op == "{" || op == "(" || op == "[") {
        balance.push_back(op == "{" ? '}' : op == "(" ? ')' : ']');
      } else if (op == "}" || op == ")" || op == "]") {
        if (balance.empty()) return LexError(line_, "unexpected '" + op + "'");
        if (balance.back() != op[0]) {
          return LexError(line_, "unexpected '" + op + "', expected '" +
                                     std::string(1, balance.back()) + "'");
        }
        balance.pop_back();
      }
      Emit(TokenType::kOperator, op);
      p += op.size();
    }
  }

  // A quoted string literal at *pp; *pp moves past its closing quote.
  Status String(size_t* pp) {
    const size_t p = *pp;
    const char quote = src_[p];
    size_t q = p + 1;
    while (q < src_.size() && src_[q] != quote) q += src_[q] == '\\' ? 2 : 1;
    if (q >= src_.size()) return LexError(line_, "unterminated string");
    std::string body = src_.substr(p + 1, q - p - 1);
    ASSIGN_OR_RETURN(std::string value, Unescape(body, line_));
    Emit(TokenType::kString, std::move(value));
    line_ += CountNewlines(body);
    *pp = q + 1;
    return OkStatus();
  }

  Status Number(size_t* pp) {
    size_t p = *pp;
    bool after_dot = p > 0 && src_[p - 1] == '.';
    size_t int_len = DigitRun(src_, p);
    size_t q = p + int_len;
    // Float: digits then (.digits)?e[+-]digits, or .digits.
    if (!after_dot) {
      size_t f = q;
      bool has_frac = false;
      if (f + 1 < src_.size() && src_[f] == '.' && IsDigit(src_[f + 1])) {
        f += 1 + DigitRun(src_, f + 1);
        has_frac = true;
      }
      size_t e = f;
      bool has_exp = false;
      if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
        size_t d = e + 1;
        if (d < src_.size() && (src_[d] == '+' || src_[d] == '-')) ++d;
        if (d < src_.size() && IsDigit(src_[d])) {
          e = d + DigitRun(src_, d);
          has_exp = true;
        }
      }
      if (has_frac || has_exp) {
        size_t end = has_exp ? e : f;
        std::string text;
        for (size_t i = p; i < end; ++i) {
          if (src_[i] != '_') text += src_[i];
        }
        Token t{TokenType::kFloat, text, line_};
        t.float_value = std::strtod(text.c_str(), nullptr);
        tokens_.push_back(std::move(t));
        *pp = end;
        return OkStatus();
      }
    }
    // Integer (decimal, or 0b/0o/0x).
    std::string text;
    int base = 10;
    if (src_[p] == '0' && p + 1 < src_.size() &&
        std::strchr("bBoOxX", src_[p + 1]) != nullptr) {
      char b = static_cast<char>(src_[p + 1] | 0x20);
      base = b == 'b' ? 2 : b == 'o' ? 8 : 16;
      q = p + 2;
      while (q < src_.size() && (HexDigit(src_[q]) >= 0 || src_[q] == '_') &&
             (src_[q] == '_' || HexDigit(src_[q]) < base)) {
        if (src_[q] != '_') text += src_[q];
        ++q;
      }
    } else if (src_[p] == '0') {
      q = p + 1;
      while (q < src_.size() && (src_[q] == '0' || src_[q] == '_')) ++q;
      text = "0";
    } else {
      for (size_t i = p; i < q; ++i) {
        if (src_[i] != '_') text += src_[i];
      }
    }
    errno = 0;
    Token t{TokenType::kInteger, text, line_};
    t.int_value = std::strtoll(text.c_str(), nullptr, base);
    if (errno == ERANGE) return LexError(line_, "integer literal too large");
    tokens_.push_back(std::move(t));
    *pp = q;
    return OkStatus();
  }

  std::string src_;
  std::vector<Token> tokens_;
  int line_ = 1;
  int pending_newlines_ = 0;
};

// Normalizes \r\n and \r to \n and drops one trailing newline, as jinja2
// does with keep_trailing_newline=False.
std::string Normalize(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\r') {
      out += '\n';
      if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
    } else {
      out += s[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

StatusOr<std::vector<Token>> Tokenize(std::string_view source) {
  return Lexer(Normalize(source)).Run();
}

}  // namespace weft::chat
