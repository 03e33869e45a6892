// jinja2's built-in filters (jinja2/filters.py), with Hugging Face's tojson
// override: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <unordered_map>

#include "chat/builtins.h"
#include "chat/builtins_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

using internal::Arg;
using internal::BoolArg;
using internal::FloatFilter;
using internal::Fold;
using internal::GetPath;
using internal::Indent;
using internal::IntFilter;
using internal::Join;
using internal::Map;
using internal::MinMax;
using internal::Replace;
using internal::Round;
using internal::SelectOrReject;
using internal::SortValues;
using internal::StrInput;
using internal::TitleFilter;
using internal::ToJsonFilter;

using FilterFn =
    std::function<StatusOr<Value>(Interpreter&, const Value&, CallArgs&)>;

StatusOr<Value> AbsFilter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_float()) return Value(std::fabs(v.number()));
  if (v.is_int() || v.is_bool()) return Negate(v, v.integer() < 0);
  return TypeError("bad operand type for abs(): '" + v.TypeName() + "'");
}

StatusOr<Value> AttrFilter(Interpreter&, const Value& v, CallArgs& a) {
  const Value* n = Arg(a, 0, "name");
  if (n == nullptr) return TypeError("attr() missing name");
  // Attributes only (no item fallback), as jinja2's do_attr.
  std::string name = PyStr(*n);
  if (v.is_undefined()) return UndefinedError(v);
  if (IsSafeMethod(v, name)) return BindMethod(v, name);
  if (v.is_namespace()) return GetAttr(v, name);
  return Value::Undefined("'" + v.TypeName() +
                          " object' has no attribute '" + name + "'");
}

StatusOr<Value> BatchFilter(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  const Value* n = Arg(a, 0, "linecount");
  if (n == nullptr || !n->is_int() || n->integer() <= 0) {
    return TypeError("batch: linecount must be a positive integer");
  }
  const Value* fill = Arg(a, 1, "fill_with");
  size_t size = static_cast<size_t>(n->integer());
  Value::List out, cur;
  for (const Value& x : items) {
    cur.push_back(x);
    if (cur.size() == size) {
      out.push_back(Value::MakeList(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    while (fill && !fill->is_none() && cur.size() < size)
      cur.push_back(*fill);
    out.push_back(Value::MakeList(std::move(cur)));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> CapitalizeFilter(Interpreter&, const Value& v, CallArgs&) {
  std::string s = AsciiLower(PyStr(v));
  if (!s.empty()) s[0] = AsciiUpper(s.substr(0, 1))[0];
  return Value(std::move(s));
}

StatusOr<Value> CenterFilter(Interpreter&, const Value& v, CallArgs& a) {
  std::string s = PyStr(v);
  const Value* w = Arg(a, 0, "width");
  int64_t width =
      w && w->is_int() ? std::min<int64_t>(w->integer(), 1 << 20) : 80;
  int64_t len = static_cast<int64_t>(CodePointCount(s));
  if (width <= len) return Value(s);
  int64_t pad = width - len;
  int64_t left = pad / 2 + (pad & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + s +
               std::string(static_cast<size_t>(pad - left), ' '));
}

StatusOr<Value> DefaultFilter(Interpreter&, const Value& v, CallArgs& a) {
  const Value* d = Arg(a, 0, "default_value");
  bool boolean = BoolArg(a, 1, "boolean", false);
  if (v.is_undefined() || (boolean && !v.Truthy())) {
    return d ? *d : Value("");
  }
  return v;
}

StatusOr<Value> DictsortFilter(Interpreter&, const Value& v, CallArgs& a) {
  if (!v.is_dict()) return TypeError("dictsort: not a mapping");
  bool cs = BoolArg(a, 0, "case_sensitive", false);
  std::string by = "key";
  if (const Value* b = Arg(a, 1, "by")) by = PyStr(*b);
  if (by != "key" && by != "value") {
    return InvalidArgumentError(
        "You can only sort by either \"key\" or \"value\"");
  }
  bool reverse = BoolArg(a, 2, "reverse", false);
  std::vector<Value> items;
  for (const auto& [k, val] : v.dict().entries()) {
    items.push_back(Value::MakeTuple({k, val}));
  }
  size_t pos = by == "key" ? 0 : 1;
  RETURN_IF_ERROR(SortValues(
      &items,
      [&](const Value& x) -> StatusOr<Value> {
        return Fold(x.list()[pos], cs);
      },
      reverse));
  return Value::MakeList(std::move(items));
}

StatusOr<Value> EscapeFilter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_safe()) return v;
  return Value::Markup(HtmlEscape(PyStr(v)));
}

// first (kFirst) and last.
template <bool kFirst>
StatusOr<Value> EndFilter(Interpreter&, const Value& v, CallArgs&) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  if (items.empty()) {
    return Value::Undefined(kFirst ? "No first item, sequence was empty."
                                   : "No last item, sequence was empty.");
  }
  return kFirst ? items.front() : items.back();
}

StatusOr<Value> ItemsFilter(Interpreter&, const Value& v, CallArgs&) {
  Value::List out;
  if (v.is_undefined()) return Value::MakeList(std::move(out));
  if (!v.is_dict())
    return TypeError("Can only get item pairs from a mapping.");
  for (const auto& [k, val] : v.dict().entries()) {
    out.push_back(Value::MakeTuple({k, val}));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> LengthFilter(Interpreter&, const Value& v, CallArgs&) {
  ASSIGN_OR_RETURN(int64_t n, Length(v));
  return Value(n);
}

StatusOr<Value> ListFilter(Interpreter&, const Value& v, CallArgs&) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  return Value::MakeList(std::move(items));
}

StatusOr<Value> ReverseFilter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) {
    std::vector<uint32_t> cps = DecodeUtf8(v.str());
    std::reverse(cps.begin(), cps.end());
    return Value(EncodeUtf8(cps, 0, cps.size()));
  }
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  std::reverse(items.begin(), items.end());
  return Value::MakeList(std::move(items));
}

StatusOr<Value> SortFilter(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  bool reverse = BoolArg(a, 0, "reverse", false);
  bool cs = BoolArg(a, 1, "case_sensitive", false);
  const Value* attribute = Arg(a, 2, "attribute");
  RETURN_IF_ERROR(SortValues(
      &items,
      [&](const Value& x) -> StatusOr<Value> {
        ASSIGN_OR_RETURN(Value k, GetPath(x, attribute));
        return Fold(k, cs);
      },
      reverse));
  return Value::MakeList(std::move(items));
}

StatusOr<Value> StringFilter(Interpreter&, const Value& v, CallArgs&) {
  if (v.is_string()) return v;
  return Value(PyStr(v));
}

StatusOr<Value> SumFilter(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  const Value* attribute = Arg(a, 0, "attribute");
  Value total(0);
  if (const Value* s = Arg(a, 1, "start")) total = *s;
  for (const Value& x : items) {
    ASSIGN_OR_RETURN(Value k, GetPath(x, attribute));
    ASSIGN_OR_RETURN(total, BinaryOp("+", total, k, size_t{1} << 30));
  }
  return total;
}

StatusOr<Value> TrimFilter(Interpreter&, const Value& v, CallArgs& a) {
  std::optional<std::string> chars;
  if (const Value* c = Arg(a, 0, "chars"); c && !c->is_none())
    chars = PyStr(*c);
  ASSIGN_OR_RETURN(std::string s, StrInput(v));
  return Value(PyStrip(s, chars, true, true));
}

StatusOr<Value> UniqueFilter(Interpreter&, const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
  bool cs = BoolArg(a, 0, "case_sensitive", false);
  const Value* attribute = Arg(a, 1, "attribute");
  Value::List out, seen;
  for (const Value& x : items) {
    ASSIGN_OR_RETURN(Value k, GetPath(x, attribute));
    k = Fold(k, cs);
    bool dup = false;
    for (const Value& s : seen) dup = dup || Equals(s, k);
    if (dup) continue;
    seen.push_back(k);
    out.push_back(x);
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Value> WordcountFilter(Interpreter&, const Value& v, CallArgs&) {
  std::string s = PyStr(v);
  int64_t n = 0;
  bool in_word = false;
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    bool w = u >= 0x80 || std::isalnum(u) || c == '_';
    if (w && !in_word) ++n;
    in_word = w;
  }
  return Value(n);
}

// A filter that maps the value's text to a new string (lower, upper, title).
template <auto kFn>
StatusOr<Value> TextFilter(Interpreter&, const Value& v, CallArgs&) {
  return Value(kFn(PyStr(v)));
}

// select/reject (kSelect false) and their attr forms.
template <bool kSelect, bool kAttr>
StatusOr<Value> Select(Interpreter& in, const Value& v, CallArgs& a) {
  return SelectOrReject(in, v, a, kSelect, kAttr);
}

// max (kMax) and min.
template <bool kMax>
StatusOr<Value> Extreme(Interpreter&, const Value& v, CallArgs& a) {
  return MinMax(v, a, kMax);
}

const std::unordered_map<std::string, FilterFn>& Filters() {
  static const auto* filters = new std::unordered_map<std::string, FilterFn>{
      {"abs", AbsFilter},
      {"attr", AttrFilter},
      {"batch", BatchFilter},
      {"capitalize", CapitalizeFilter},
      {"center", CenterFilter},
      {"default", DefaultFilter},
      {"dictsort", DictsortFilter},
      {"escape", EscapeFilter},
      {"first", EndFilter<true>},
      {"float", FloatFilter},
      {"forceescape",
       [](Interpreter&, const Value& v, CallArgs&) -> StatusOr<Value> {
         return Value::Markup(HtmlEscape(PyStr(v)));
       }},
      {"indent", Indent},
      {"int", IntFilter},
      {"items", ItemsFilter},
      {"join", Join},
      {"last", EndFilter<false>},
      {"length", LengthFilter},
      {"list", ListFilter},
      {"lower", TextFilter<AsciiLower>},
      {"map", Map},
      {"max", Extreme<true>},
      {"min", Extreme<false>},
      {"pprint",
       [](Interpreter&, const Value& v, CallArgs&) -> StatusOr<Value> {
         return Value(PyRepr(v));
       }},
      {"reject", Select<false, false>},
      {"rejectattr", Select<false, true>},
      {"replace", Replace},
      {"reverse", ReverseFilter},
      {"round", Round},
      {"safe",
       [](Interpreter&, const Value& v, CallArgs&) -> StatusOr<Value> {
         return Value::Markup(PyStr(v));
       }},
      {"select", Select<true, false>},
      {"selectattr", Select<true, true>},
      {"sort", SortFilter},
      {"string", StringFilter},
      {"sum", SumFilter},
      {"title", TextFilter<TitleFilter>},
      {"tojson", ToJsonFilter},
      {"trim", TrimFilter},
      {"unique", UniqueFilter},
      {"upper", TextFilter<AsciiUpper>},
      {"wordcount", WordcountFilter},
  };
  return *filters;
}

const FilterFn* FindFilter(const std::string& name) {
  static const std::unordered_map<std::string, std::string> kAliases = {
      {"count", "length"}, {"d", "default"}, {"e", "escape"}};
  auto alias = kAliases.find(name);
  const std::string& real = alias == kAliases.end() ? name : alias->second;
  auto it = Filters().find(real);
  return it == Filters().end() ? nullptr : &it->second;
}

}  // namespace

bool HasFilter(const std::string& name) { return FindFilter(name) != nullptr; }

StatusOr<Value> CallFilter(Interpreter& interp, const std::string& name,
                           const Value& input, CallArgs& args) {
  const FilterFn* f = FindFilter(name);
  if (f == nullptr)
    return InvalidArgumentError("No filter named '" + name + "'.");
  // Most filters treat an undefined input like jinja2 would treat str(x);
  // those that would fail on Undefined in jinja2 report it.
  static const char* kStrict[] = {"abs", "round", "tojson", "dictsort",
                                  "batch"};
  if (input.is_undefined()) {
    for (const char* s : kStrict) {
      if (name == s) return UndefinedError(input);
    }
  }
  return (*f)(interp, input, args);
}

}  // namespace weft::chat
