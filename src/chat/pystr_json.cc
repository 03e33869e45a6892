// json.dumps for template values (pystr.h's ToJson): Python's separators,
// indent and key rules, as Hugging Face's tojson filter calls it.
#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

void JsonString(std::string_view s, bool ensure_ascii, std::string* out) {
  *out += '"';
  auto one = [&](uint32_t c) {
    switch (c) {
      case '"':
        *out += "\\\"";
        return;
      case '\\':
        *out += "\\\\";
        return;
      case '\n':
        *out += "\\n";
        return;
      case '\r':
        *out += "\\r";
        return;
      case '\t':
        *out += "\\t";
        return;
      case '\b':
        *out += "\\b";
        return;
      case '\f':
        *out += "\\f";
        return;
      default:
        break;
    }
    if (c < 0x20) {
      *out += StrFormat("\\u%04x", c);
    } else if (c < 0x80) {
      *out += static_cast<char>(c);
    } else if (c >= 0x10000) {
      uint32_t v = c - 0x10000;
      *out +=
          StrFormat("\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    } else {
      *out += StrFormat("\\u%04x", c);
    }
  };
  if (ensure_ascii) {
    for (uint32_t c : DecodeUtf8(s)) one(c);
  } else {
    for (char ch : s) {
      unsigned char c = static_cast<unsigned char>(ch);
      if (c < 0x80) {
        one(c);
      } else {
        *out += ch;
      }
    }
  }
  *out += '"';
}

struct JsonWriter {
  const JsonOptions& opts;
  std::string item_sep;
  std::string key_sep;
  std::string indent_unit;
  bool indented;
  int depth = 0;

  void Newline(std::string* out, int level) {
    *out += '\n';
    for (int i = 0; i < level; ++i) *out += indent_unit;
  }

  Status Write(const Value& v, std::string* out) {
    if (++depth > 500) return InvalidArgumentError("tojson: nesting too deep");
    Status s = WriteInner(v, out);
    --depth;
    return s;
  }

  Status Key(const Value& k, std::string* out) {
    if (k.is_string()) {
      JsonString(k.str(), opts.ensure_ascii, out);
    } else if (k.is_bool()) {
      *out += k.boolean() ? "\"true\"" : "\"false\"";
    } else if (k.is_none()) {
      *out += "\"null\"";
    } else if (k.is_int()) {
      *out += '"' + std::to_string(k.integer()) + '"';
    } else if (k.is_float()) {
      *out += '"' + PyFloatRepr(k.number()) + '"';
    } else {
      return InvalidArgumentError(
          "keys must be str, int, float, bool or None, "
          "not " +
          k.TypeName());
    }
    return OkStatus();
  }

  Status WriteInner(const Value& v, std::string* out) {
    switch (v.kind()) {
      case ValueKind::kNone:
        *out += "null";
        return OkStatus();
      case ValueKind::kBool:
        *out += v.boolean() ? "true" : "false";
        return OkStatus();
      case ValueKind::kInt:
        *out += std::to_string(v.integer());
        return OkStatus();
      case ValueKind::kFloat: {
        double d = v.number();
        if (std::isnan(d)) {
          *out += "NaN";
        } else if (std::isinf(d)) {
          *out += d > 0 ? "Infinity" : "-Infinity";
        } else {
          *out += PyFloatRepr(d);
        }
        return OkStatus();
      }
      case ValueKind::kString:
        JsonString(v.str(), opts.ensure_ascii, out);
        return OkStatus();
      case ValueKind::kList:
      case ValueKind::kTuple: {
        const auto& items = v.list();
        if (items.empty()) {
          *out += "[]";
          return OkStatus();
        }
        *out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i > 0) *out += item_sep;
          if (indented) Newline(out, depth);
          RETURN_IF_ERROR(Write(items[i], out));
        }
        if (indented) Newline(out, depth - 1);
        *out += ']';
        return OkStatus();
      }
      case ValueKind::kDict: {
        const Dict& d = v.dict();
        if (d.empty()) {
          *out += "{}";
          return OkStatus();
        }
        std::vector<const std::pair<Value, Value>*> entries;
        for (const auto& e : d.entries()) entries.push_back(&e);
        if (opts.sort_keys) {
          Status err;
          std::stable_sort(entries.begin(), entries.end(),
                           [&](const auto* a, const auto* b) {
                             auto lt = LessThan(a->first, b->first);
                             if (!lt.ok()) {
                               err = lt.status();
                               return false;
                             }
                             return *lt;
                           });
          RETURN_IF_ERROR(err);
        }
        *out += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
          if (i > 0) *out += item_sep;
          if (indented) Newline(out, depth);
          RETURN_IF_ERROR(Key(entries[i]->first, out));
          *out += key_sep;
          RETURN_IF_ERROR(Write(entries[i]->second, out));
        }
        if (indented) Newline(out, depth - 1);
        *out += '}';
        return OkStatus();
      }
      default:
        return InvalidArgumentError("Object of type " + v.TypeName() +
                                    " is not JSON serializable");
    }
  }
};

}  // namespace

StatusOr<std::string> ToJson(const Value& v, const JsonOptions& opts) {
  JsonWriter w{opts, "", "", "", false};
  w.indented = opts.indent >= 0 || opts.indent_str.has_value();
  if (opts.indent_str.has_value()) {
    w.indent_unit = *opts.indent_str;
  } else if (opts.indent > 0) {
    w.indent_unit.assign(static_cast<size_t>(opts.indent), ' ');
  }
  w.item_sep =
      !opts.item_sep.empty() ? opts.item_sep : (w.indented ? "," : ", ");
  w.key_sep = !opts.key_sep.empty() ? opts.key_sep : ": ";
  std::string out;
  RETURN_IF_ERROR(w.Write(v, &out));
  return out;
}

}  // namespace weft::chat
