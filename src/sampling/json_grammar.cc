#include "sampling/json_grammar.h"

namespace weft::sampling {
namespace {

enum Mode : uint8_t {
  kStart = 0,     // whitespace, then the top-level '{'
  kKeyOrClose,    // after '{': a key or '}'
  kKey,           // after ',' in an object: a key
  kColon,         // after a key: ':'
  kValue,         // after ':' or ',' in an array: a value
  kValueOrClose,  // after '[': a value or ']'
  kAfterValue,    // ',' or the closer of the innermost container
  kString,        // inside a string; aux = UTF-8 continuation bytes due
  kEscape,        // after a backslash
  kHex,           // in \uXXXX; aux = hex digits left
  kLiteral,       // in true/false/null (lit); aux = bytes matched
  kNumMinus,      // after '-': a digit
  kNumZero,       // after a leading 0: '.', 'e' or the end
  kNumInt,        // in the integer digits
  kNumDot,        // after '.': a digit
  kNumFrac,       // in the fraction digits
  kNumE,          // after 'e': a sign or a digit
  kNumESign,      // after the exponent's sign: a digit
  kNumExp,        // in the exponent digits
  kDone,          // the top-level object is closed
};

constexpr std::string_view kLiterals[] = {"true", "false", "null"};

bool IsWs(uint8_t b) { return b == ' ' || b == '\t' || b == '\n' || b == '\r'; }

// A whitespace byte between tokens (see json_grammar.h for the shape).
bool Whitespace(JsonState* s, uint8_t b) {
  constexpr uint8_t kNewline = 0x80;
  if (b == '\n') {
    if (s->ws != 0) return false;  // only first, only once
    s->ws = kNewline;
    return true;
  }
  if (b == '\r' || (s->ws & ~kNewline) >= kJsonMaxIndent) return false;
  ++s->ws;
  return true;
}
bool IsDigit(uint8_t b) { return b >= '0' && b <= '9'; }
bool IsHex(uint8_t b) {
  return IsDigit(b) || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
}

bool TopIsArray(const JsonState& s) { return (s.stack >> (s.depth - 1)) & 1; }

bool Push(JsonState* s, bool array) {
  if (s->depth >= kJsonMaxDepth) return false;
  if (array) s->stack |= uint64_t{1} << s->depth;
  ++s->depth;
  s->mode = array ? kValueOrClose : kKeyOrClose;
  return true;
}

// b is '}' or ']': closes the innermost container if it matches.
bool Close(JsonState* s, uint8_t b) {
  if (s->depth == 0 || TopIsArray(*s) != (b == ']')) return false;
  --s->depth;
  s->stack &= ~(uint64_t{1} << s->depth);
  s->mode = s->depth == 0 ? kDone : kAfterValue;
  return true;
}

bool StartValue(JsonState* s, uint8_t b) {
  switch (b) {
    case '{':
      return Push(s, false);
    case '[':
      return Push(s, true);
    case '"':
      s->mode = kString;
      return true;
    case '-':
      s->mode = kNumMinus;
      return true;
    case '0':
      s->mode = kNumZero;
      return true;
    case 't':
    case 'f':
    case 'n':
      s->mode = kLiteral;
      s->lit = b == 't' ? 0 : b == 'f' ? 1 : 2;
      s->aux = 1;
      return true;
    default:
      if (b >= '1' && b <= '9') {
        s->mode = kNumInt;
        return true;
      }
      return false;
  }
}

bool AfterValue(JsonState* s, uint8_t b) {
  if (b == ',') {
    s->mode = TopIsArray(*s) ? kValue : kKey;
    return true;
  }
  if (b == '}' || b == ']') return Close(s, b);
  return false;
}

// A string byte outside escapes, with no continuation byte due.
bool StringByte(JsonState* s, uint8_t b) {
  if (b == '"') {
    s->mode = s->key ? kColon : kAfterValue;
    s->key = 0;
    return true;
  }
  if (b == '\\') {
    s->mode = kEscape;
    return true;
  }
  if (b < 0x20) return false;  // raw control characters must be escaped
  if (b < 0x80) return true;
  // The lead byte of a multi-byte character (RFC 3629's table).
  if (b >= 0xC2 && b <= 0xDF) {
    s->aux = 1;
  } else if (b >= 0xE0 && b <= 0xEF) {
    s->aux = 2;
    if (b == 0xE0) s->lo = 0xA0;  // no overlong forms
    if (b == 0xED) s->hi = 0x9F;  // no surrogates
  } else if (b >= 0xF0 && b <= 0xF4) {
    s->aux = 3;
    if (b == 0xF0) s->lo = 0x90;  // no overlong forms
    if (b == 0xF4) s->hi = 0x8F;  // nothing past U+10FFFF
  } else {
    return false;
  }
  return true;
}

// The end of a number at byte b (not part of it): b is read after it.
bool EndNumber(JsonState* s, uint8_t b) {
  s->mode = kAfterValue;
  return JsonAdvanceByte(s, b);
}

bool NumberByte(JsonState* s, uint8_t b) {
  const bool digit = IsDigit(b);
  switch (s->mode) {
    case kNumMinus:
      if (!digit) return false;
      s->mode = b == '0' ? kNumZero : kNumInt;
      return true;
    case kNumZero:
    case kNumInt:
      if (digit && s->mode == kNumInt) return true;
      if (b == '.') {
        s->mode = kNumDot;
        return true;
      }
      if (b == 'e' || b == 'E') {
        s->mode = kNumE;
        return true;
      }
      return !digit && EndNumber(s, b);  // no digit after a leading 0
    case kNumDot:
      if (!digit) return false;
      s->mode = kNumFrac;
      return true;
    case kNumFrac:
      if (digit) return true;
      if (b == 'e' || b == 'E') {
        s->mode = kNumE;
        return true;
      }
      return EndNumber(s, b);
    case kNumE:
      if (b == '+' || b == '-') {
        s->mode = kNumESign;
        return true;
      }
      [[fallthrough]];
    case kNumESign:
      if (!digit) return false;
      s->mode = kNumExp;
      return true;
    case kNumExp:
      return digit || EndNumber(s, b);
    default:
      return false;
  }
}

}  // namespace

bool JsonAdvanceByte(JsonState* s, uint8_t b) {
  switch (s->mode) {
    case kStart:
    case kKeyOrClose:
    case kKey:
    case kColon:
    case kValue:
    case kValueOrClose:
    case kAfterValue:
      if (IsWs(b)) return Whitespace(s, b);
      s->ws = 0;
      switch (s->mode) {
        case kStart:
          return b == '{' && Push(s, false);
        case kKeyOrClose:
          if (b == '}') return Close(s, b);
          [[fallthrough]];
        case kKey:
          if (b != '"') return false;
          s->mode = kString;
          s->key = 1;
          return true;
        case kColon:
          if (b != ':') return false;
          s->mode = kValue;
          return true;
        case kValueOrClose:
          if (b == ']') return Close(s, b);
          [[fallthrough]];
        case kValue:
          return StartValue(s, b);
        default:
          return AfterValue(s, b);
      }
    case kString:
      if (s->aux == 0) return StringByte(s, b);
      if (b < s->lo || b > s->hi) return false;
      --s->aux;
      s->lo = 0x80;
      s->hi = 0xBF;
      return true;
    case kEscape:
      if (b == 'u') {
        s->mode = kHex;
        s->aux = 4;
        return true;
      }
      if (b == '"' || b == '\\' || b == '/' || b == 'b' || b == 'f' ||
          b == 'n' || b == 'r' || b == 't') {
        s->mode = kString;
        return true;
      }
      return false;
    case kHex:
      if (!IsHex(b)) return false;
      if (--s->aux == 0) s->mode = kString;
      return true;
    case kLiteral: {
      const std::string_view lit = kLiterals[s->lit];
      if (b != static_cast<uint8_t>(lit[s->aux])) return false;
      if (++s->aux == lit.size()) {
        s->aux = 0;
        s->lit = 0;
        s->mode = kAfterValue;
      }
      return true;
    }
    case kDone:
      return false;
    default:
      return NumberByte(s, b);
  }
}

bool JsonComplete(const JsonState& s) { return s.mode == kDone; }

bool JsonInPlainString(const JsonState& s) {
  return s.mode == kString && s.aux == 0;
}

}  // namespace weft::sampling
