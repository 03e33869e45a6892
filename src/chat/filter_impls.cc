// Filter implementations too long for the table in filters.cc.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "chat/builtins.h"
#include "chat/builtins_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat::internal {

// Positional argument `i` or keyword `name`; nullptr when neither is given.
const Value* Arg(const CallArgs& a, size_t i, const char* name) {
  if (i < a.args.size()) return &a.args[i];
  return a.Kwarg(name);
}

StatusOr<const Value*> Required(const CallArgs& a, size_t i, const char* name,
                                const std::string& fn) {
  const Value* v = Arg(a, i, name);
  if (v == nullptr) return TypeError(fn + "() missing argument '" + name + "'");
  return v;
}

StatusOr<std::string> StrArg(const CallArgs& a, size_t i, const char* name,
                             const std::string& fn) {
  ASSIGN_OR_RETURN(const Value* v, Required(a, i, name, fn));
  if (!v->is_string()) {
    return TypeError(fn + "() argument must be str, not " + v->TypeName());
  }
  return v->str();
}

bool BoolArg(const CallArgs& a, size_t i, const char* name, bool dflt) {
  const Value* v = Arg(a, i, name);
  return v == nullptr ? dflt : v->Truthy();
}

StatusOr<std::string> StrInput(const Value& v) {
  if (v.is_undefined()) return std::string();
  return PyStr(v);
}

// Key for sorting/unique with case folding of strings.
Value Fold(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(AsciiLower(v.str()));
  return v;
}

// make_attrgetter: "a.b.0" paths, integer parts looked up as integers.
StatusOr<Value> GetPath(const Value& item, const Value* attribute) {
  if (attribute == nullptr || attribute->is_none()) return item;
  if (!attribute->is_string()) return GetItem(item, *attribute);
  Value cur = item;
  for (std::string_view part : StrSplit(attribute->str(), '.')) {
    bool digits = !part.empty() &&
                  std::all_of(part.begin(), part.end(),
                              [](char c) { return c >= '0' && c <= '9'; });
    Value key = digits
                    ? Value(static_cast<int64_t>(std::stoll(std::string(part))))
                    : Value(std::string(part));
    ASSIGN_OR_RETURN(cur, GetItem(cur, key));
  }
  return cur;
}

Status SortValues(std::vector<Value>* items,
                  const std::function<StatusOr<Value>(const Value&)>& key,
                  bool reverse) {
  std::vector<std::pair<Value, size_t>> keyed;
  for (size_t i = 0; i < items->size(); ++i) {
    ASSIGN_OR_RETURN(Value k, key((*items)[i]));
    keyed.emplace_back(std::move(k), i);
  }
  Status err;
  std::stable_sort(
      keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        auto lt =
            reverse ? LessThan(y.first, x.first) : LessThan(x.first, y.first);
        if (!lt.ok()) {
          err = lt.status();
          return false;
        }
        return *lt;
      });
  RETURN_IF_ERROR(err);
  std::vector<Value> out;
  for (const auto& [k, i] : keyed) out.push_back((*items)[i]);
  *items = std::move(out);
  return OkStatus();
}

StatusOr<Value> ToJsonFilter(Interpreter&, const Value& v, CallArgs& a) {
  JsonOptions o;
  o.ensure_ascii = BoolArg(a, 0, "ensure_ascii", false);
  if (const Value* indent = Arg(a, 1, "indent"); indent && !indent->is_none()) {
    if (indent->is_string()) {
      o.indent_str = indent->str();
    } else if (indent->is_int() || indent->is_bool()) {
      o.indent =
          static_cast<int>(std::clamp<int64_t>(indent->integer(), 0, 64));
    } else {
      return TypeError("tojson: indent must be an integer or a string");
    }
  }
  if (const Value* sep = Arg(a, 2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_sequence() || sep->list().size() != 2 ||
        !sep->list()[0].is_string() || !sep->list()[1].is_string()) {
      return TypeError("tojson: separators must be a pair of strings");
    }
    o.item_sep = sep->list()[0].str();
    o.key_sep = sep->list()[1].str();
  }
  o.sort_keys = BoolArg(a, 3, "sort_keys", false);
  ASSIGN_OR_RETURN(std::string s, ToJson(v, o));
  return Value(std::move(s));
}

StatusOr<Value> Indent(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::string s, StrInput(v));
  std::string ind = "    ";
  if (const Value* w = Arg(a, 0, "width")) {
    if (w->is_string()) {
      ind = w->str();
    } else if (w->is_int()) {
      ind.assign(
          static_cast<size_t>(std::clamp<int64_t>(w->integer(), 0, 4096)), ' ');
    } else {
      return TypeError("indent: width must be an integer or a string");
    }
  }
  bool first = BoolArg(a, 1, "first", false);
  bool blank = BoolArg(a, 2, "blank", false);
  s += "\n";
  std::vector<std::string> lines = PySplitLines(s);
  std::string rv;
  if (blank) {
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) rv += "\n" + ind;
      rv += lines[i];
    }
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t i = 1; i < lines.size(); ++i) {
      rv += "\n";
      if (!lines[i].empty()) rv += ind;
      rv += lines[i];
    }
  }
  if (first) rv = ind + rv;
  return Value(std::move(rv));
}

StatusOr<Value> Join(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::string d;
  if (const Value* dv = Arg(a, 0, "d")) d = PyStr(*dv);
  const Value* attribute = Arg(a, 1, "attribute");
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += d;
    ASSIGN_OR_RETURN(Value x, GetPath(items[i], attribute));
    out += PyStr(x);
  }
  return Value(std::move(out));
}

StatusOr<Value> Replace(Interpreter&, const Value& v, CallArgs& a) {
  const Value* old_v = Arg(a, 0, "old");
  const Value* new_v = Arg(a, 1, "new");
  if (old_v == nullptr || new_v == nullptr) {
    return TypeError("replace() missing required arguments");
  }
  const Value* count_v = Arg(a, 2, "count");
  int64_t count = count_v && !count_v->is_none() && count_v->is_int()
                      ? count_v->integer()
                      : -1;
  std::string s = PyStr(v), from = PyStr(*old_v), to = PyStr(*new_v), out;
  if (from.empty()) {
    // Python inserts `to` between every code point (and at both ends).
    std::vector<uint32_t> cps = DecodeUtf8(s);
    int64_t n = 0;
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (i < cps.size()) AppendUtf8(cps[i], &out);
    }
    return Value(std::move(out));
  }
  return Value(PyReplace(s, from, to, count));
}

StatusOr<Value> Round(Interpreter&, const Value& v, CallArgs& a) {
  if (!v.is_number()) return TypeError("round: not a number");
  int64_t precision = 0;
  if (const Value* p = Arg(a, 0, "precision"); p && p->is_int()) {
    precision = std::clamp<int64_t>(p->integer(), -300, 300);
  }
  std::string method = "common";
  if (const Value* m = Arg(a, 1, "method"); m && m->is_string())
    method = m->str();
  if (method != "common" && method != "ceil" && method != "floor") {
    return InvalidArgumentError("method must be common, ceil or floor");
  }
  if (method == "common" && !v.is_float()) return Value(v.integer());
  double x = v.number();
  if (method == "common") {
    if (precision < 0 || !std::isfinite(x)) {
      double f = std::pow(10.0, static_cast<double>(-precision));
      return Value(std::nearbyint(x / f) * f);
    }
    char buf[512];
    std::snprintf(buf, sizeof(buf), "%.*f", static_cast<int>(precision), x);
    return Value(std::strtod(buf, nullptr));
  }
  double f = std::pow(10.0, static_cast<double>(precision));
  double r = method == "ceil" ? std::ceil(x * f) : std::floor(x * f);
  return Value(r / f);
}

// Python float(str): strips whitespace, accepts inf/nan forms.
std::optional<double> ParseFloat(std::string_view s) {
  std::string t = PyStrip(s, std::nullopt, true, true);
  std::string clean;
  for (char c : t) {
    if (c != '_') clean += c;
  }
  if (clean.empty()) return std::nullopt;
  char* end = nullptr;
  double d = std::strtod(clean.c_str(), &end);
  if (end != clean.c_str() + clean.size()) return std::nullopt;
  return d;
}

StatusOr<Value> IntFilter(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt(0);
  if (const Value* d = Arg(a, 0, "default")) dflt = *d;
  int base = 10;
  if (const Value* b = Arg(a, 1, "base"); b && b->is_int()) {
    base = static_cast<int>(b->integer());
  }
  if (v.is_int() || v.is_bool()) return Value(v.integer());
  if (v.is_float()) {
    double d = v.number();
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18) return dflt;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string t = PyStrip(v.str(), std::nullopt, true, true);
    if (!t.empty() && base >= 2 && base <= 36) {
      errno = 0;
      char* end = nullptr;
      long long r = std::strtoll(t.c_str(), &end, base);
      if (errno == 0 && end == t.c_str() + t.size()) {
        return Value(static_cast<int64_t>(r));
      }
    }
    std::optional<double> f = ParseFloat(v.str());
    if (f && std::isfinite(*f) && std::fabs(*f) < 9.2e18) {
      return Value(static_cast<int64_t>(*f));
    }
  }
  return dflt;
}

StatusOr<Value> FloatFilter(Interpreter&, const Value& v, CallArgs& a) {
  Value dflt(0.0);
  if (const Value* d = Arg(a, 0, "default")) dflt = *d;
  if (v.is_number()) return Value(v.number());
  if (v.is_string()) {
    std::optional<double> f = ParseFloat(v.str());
    if (f) return Value(*f);
  }
  return dflt;
}

// select/reject/selectattr/rejectattr.
StatusOr<Value> SelectOrReject(Interpreter& in, const Value& v, CallArgs& a,
                               bool select, bool attr) {
  Value::List out;
  if (!v.Truthy()) return Value::MakeList(std::move(out));
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  size_t off = 0;
  const Value* attribute = nullptr;
  if (attr) {
    if (a.args.empty()) {
      return InvalidArgumentError("Missing parameter for attribute name");
    }
    attribute = &a.args[0];
    off = 1;
  }
  std::string test;
  CallArgs test_args;
  if (a.args.size() > off) {
    test = PyStr(a.args[off]);
    test_args.args.assign(a.args.begin() + static_cast<long>(off) + 1,
                          a.args.end());
    test_args.kwargs = a.kwargs;
  }
  for (const Value& item : items) {
    ASSIGN_OR_RETURN(Value x, GetPath(item, attribute));
    bool keep;
    if (test.empty()) {
      keep = x.Truthy();
    } else {
      CallArgs args = test_args;
      ASSIGN_OR_RETURN(keep, CallTest(in, test, x, args));
    }
    if (keep == select) out.push_back(item);
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> Map(Interpreter& in, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  Value::List out;
  if (a.args.empty() && a.Kwarg("attribute") != nullptr) {
    const Value* attribute = a.Kwarg("attribute");
    const Value* dflt = a.Kwarg("default");
    for (const Value& item : items) {
      ASSIGN_OR_RETURN(Value x, GetPath(item, attribute));
      if (x.is_undefined() && dflt != nullptr && !dflt->is_none()) x = *dflt;
      out.push_back(std::move(x));
    }
    return Value::MakeList(std::move(out));
  }
  if (a.args.empty())
    return InvalidArgumentError("map requires a filter argument");
  std::string name = PyStr(a.args[0]);
  for (const Value& item : items) {
    CallArgs fa;
    fa.args.assign(a.args.begin() + 1, a.args.end());
    fa.kwargs = a.kwargs;
    ASSIGN_OR_RETURN(Value x, CallFilter(in, name, item, fa));
    out.push_back(std::move(x));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> MinMax(const Value& v, CallArgs& a, bool is_max) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.empty()) {
    return Value::Undefined("No aggregated item, sequence was empty.");
  }
  bool cs = BoolArg(a, 0, "case_sensitive", false);
  const Value* attribute = Arg(a, 1, "attribute");
  size_t best = 0;
  ASSIGN_OR_RETURN(Value best_key, GetPath(items[0], attribute));
  best_key = Fold(best_key, cs);
  for (size_t i = 1; i < items.size(); ++i) {
    ASSIGN_OR_RETURN(Value k, GetPath(items[i], attribute));
    k = Fold(k, cs);
    ASSIGN_OR_RETURN(bool better,
                     is_max ? LessThan(best_key, k) : LessThan(k, best_key));
    if (better) {
      best = i;
      best_key = k;
    }
  }
  return items[best];
}

std::string TitleFilter(const std::string& s) {
  // Split on runs of [-\s({\[<]; uppercase the first char of each piece.
  // Per code point: a UTF-8 continuation byte is no separator.
  std::string out;
  bool start = true;
  for (uint32_t cp : DecodeUtf8(s)) {
    const bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' ||
                     cp == '<' || IsPyWhitespace(cp);
    if (cp < 0x80 && !sep) {
      cp = static_cast<uint32_t>(start ? std::toupper(static_cast<int>(cp))
                                       : std::tolower(static_cast<int>(cp)));
    }
    AppendUtf8(cp, &out);
    start = sep;
  }
  return out;
}

}  // namespace weft::chat::internal
