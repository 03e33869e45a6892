// jinja2's tests (jinja2/tests.py), the globals Hugging Face templates use,
// and the safe Python methods of str, dict, list and tuple.
#include <algorithm>
#include <cctype>
#include <ctime>
#include <unordered_map>
#include <unordered_set>

#include "chat/builtins.h"
#include "chat/builtins_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

using internal::Arg;
using internal::Required;
using internal::StrArg;

// --- tests -----------------------------------------------------------------

using TestFn = StatusOr<bool> (*)(const Value&, CallArgs&);

StatusOr<bool> CompareTest(const Value& v, CallArgs& a, const char* op) {
  ASSIGN_OR_RETURN(const Value* other, Required(a, 0, "other", "test"));
  std::string o = op;
  if (o == "==") return Equals(v, *other);
  if (o == "!=") return !Equals(v, *other);
  if (v.is_undefined()) return UndefinedError(v);
  if (other->is_undefined()) return UndefinedError(*other);
  if (o == "<") return LessThan(v, *other);
  if (o == ">") return LessThan(*other, v);
  ASSIGN_OR_RETURN(bool lt,
                   o == "<=" ? LessThan(v, *other) : LessThan(*other, v));
  return lt || Equals(v, *other);
}

StatusOr<bool> Parity(const Value& v, int want) {
  if (v.is_undefined()) return UndefinedError(v);
  if (!(v.is_int() || v.is_bool()))
    return TypeError("odd/even need an integer");
  return (((v.integer() % 2) + 2) % 2) == want;
}

// "iterable" and "sequence" alike: what a for loop can walk.
StatusOr<bool> IterableTest(const Value& v, CallArgs&) {
  return v.is_undefined() || v.is_string() || v.is_sequence() ||
         v.is_dict();
}

StatusOr<bool> DivisiblebyTest(const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(const Value* n, Required(a, 0, "num", "divisibleby"));
  ASSIGN_OR_RETURN(Value m, BinaryOp("%", v, *n, 1 << 20));
  return Equals(m, Value(0));
}

StatusOr<bool> LowerTest(const Value& v, CallArgs&) {
  std::string s = PyStr(v);
  return AsciiLower(s) == s && AsciiUpper(s) != s;
}

StatusOr<bool> UpperTest(const Value& v, CallArgs&) {
  std::string s = PyStr(v);
  return AsciiUpper(s) == s && AsciiLower(s) != s;
}

StatusOr<bool> SameasTest(const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(const Value* o, Required(a, 0, "other", "sameas"));
  if (v.is_none() || v.is_bool() || v.is_undefined()) {
    return v.kind() == o->kind() && Equals(v, *o);
  }
  return false;
}

StatusOr<bool> InTest(const Value& v, CallArgs& a) {
  ASSIGN_OR_RETURN(const Value* seq, Required(a, 0, "seq", "in"));
  return Contains(*seq, v);
}

const std::unordered_map<std::string, TestFn>& Tests() {
  static const auto* tests = new std::unordered_map<std::string, TestFn>{
      {"defined",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return !v.is_undefined();
       }},
      {"undefined",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_undefined();
       }},
      {"none",
       [](const Value& v, CallArgs&) -> StatusOr<bool> { return v.is_none(); }},
      {"boolean",
       [](const Value& v, CallArgs&) -> StatusOr<bool> { return v.is_bool(); }},
      {"true",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_bool() && v.boolean();
       }},
      {"false",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_bool() && !v.boolean();
       }},
      {"integer",
       [](const Value& v, CallArgs&) -> StatusOr<bool> { return v.is_int(); }},
      {"float",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_float();
       }},
      {"number",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_number();
       }},
      {"string",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_string();
       }},
      {"mapping",
       [](const Value& v, CallArgs&) -> StatusOr<bool> { return v.is_dict(); }},
      {"iterable", IterableTest},
      {"sequence", IterableTest},
      {"callable",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_callable();
       }},
      {"escaped",
       [](const Value& v, CallArgs&) -> StatusOr<bool> { return v.is_safe(); }},
      {"odd", [](const Value& v, CallArgs&) { return Parity(v, 1); }},
      {"even", [](const Value& v, CallArgs&) { return Parity(v, 0); }},
      {"divisibleby", DivisiblebyTest},
      {"lower", LowerTest},
      {"upper", UpperTest},
      {"sameas", SameasTest},
      {"in", InTest},
      {"filter",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_string() && HasFilter(v.str());
       }},
      {"test",
       [](const Value& v, CallArgs&) -> StatusOr<bool> {
         return v.is_string() && HasTest(v.str());
       }},
      {"==",
       [](const Value& v, CallArgs& a) { return CompareTest(v, a, "=="); }},
      {"!=",
       [](const Value& v, CallArgs& a) { return CompareTest(v, a, "!="); }},
      {"<", [](const Value& v, CallArgs& a) { return CompareTest(v, a, "<"); }},
      {"<=",
       [](const Value& v, CallArgs& a) { return CompareTest(v, a, "<="); }},
      {">", [](const Value& v, CallArgs& a) { return CompareTest(v, a, ">"); }},
      {">=",
       [](const Value& v, CallArgs& a) { return CompareTest(v, a, ">="); }},
  };
  return *tests;
}

const TestFn* FindTest(const std::string& name) {
  static const std::unordered_map<std::string, std::string> kAliases = {
      {"eq", "=="}, {"equalto", "=="},    {"ne", "!="},
      {"lt", "<"},  {"lessthan", "<"},    {"le", "<="},
      {"gt", ">"},  {"greaterthan", ">"}, {"ge", ">="}};
  auto alias = kAliases.find(name);
  const std::string& real = alias == kAliases.end() ? name : alias->second;
  auto it = Tests().find(real);
  return it == Tests().end() ? nullptr : &it->second;
}

// --- globals ---------------------------------------------------------------

class Builtin : public Callable {
 public:
  using Fn = StatusOr<Value> (*)(Interpreter&, CallArgs&);
  Builtin(std::string name, Fn fn) : name_(std::move(name)), fn_(fn) {}
  StatusOr<Value> Call(Interpreter& interp, CallArgs& args) override {
    return fn_(interp, args);
  }
  std::string Name() const override { return name_; }

 private:
  std::string name_;
  Fn fn_;
};

StatusOr<Value> Range(Interpreter&, CallArgs& a) {
  std::vector<int64_t> n;
  for (const Value& v : a.args) {
    if (!(v.is_int() || v.is_bool())) {
      return TypeError("'" + v.TypeName() +
                       "' object cannot be interpreted as an integer");
    }
    n.push_back(v.integer());
  }
  if (n.empty() || n.size() > 3)
    return TypeError("range expected 1 to 3 arguments");
  int64_t start = n.size() == 1 ? 0 : n[0];
  int64_t stop = n.size() == 1 ? n[0] : n[1];
  int64_t step = n.size() == 3 ? n[2] : 1;
  if (step == 0)
    return InvalidArgumentError("ValueError: range() arg 3 must not be zero");
  Value::List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= 100000) {  // jinja2.sandbox.MAX_RANGE
      return ResourceExhaustedError(
          "Range too big. The sandbox blocks ranges larger than MAX_RANGE "
          "(100000).");
    }
    out.push_back(Value(i));
  }
  return Value::MakeList(std::move(out));
}

StatusOr<Dict> DictFromArgs(CallArgs& a) {
  Dict d;
  if (!a.args.empty()) {
    const Value& src = a.args[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.dict().entries()) d.Set(k, v);
    } else {
      ASSIGN_OR_RETURN(std::vector<Value> pairs, Iterate(src));
      for (const Value& p : pairs) {
        if (!p.is_sequence() || p.list().size() != 2) {
          return TypeError(
              "dictionary update sequence element has wrong length");
        }
        d.Set(p.list()[0], p.list()[1]);
      }
    }
  }
  for (const auto& [k, v] : a.kwargs) d.Set(Value(k), v);
  return d;
}

StatusOr<Value> DictGlobal(Interpreter&, CallArgs& a) {
  ASSIGN_OR_RETURN(Dict d, DictFromArgs(a));
  return Value::MakeDict(std::move(d));
}

StatusOr<Value> NamespaceGlobal(Interpreter&, CallArgs& a) {
  ASSIGN_OR_RETURN(Dict d, DictFromArgs(a));
  return Value::MakeNamespace(std::move(d));
}

StatusOr<Value> RaiseException(Interpreter&, CallArgs& a) {
  std::string msg = a.args.empty() ? "" : PyStr(a.args[0]);
  return Status(kRaisedExceptionCode, msg);
}

StatusOr<Value> StrftimeNow(Interpreter& interp, CallArgs& a) {
  ASSIGN_OR_RETURN(std::string fmt, StrArg(a, 0, "format", "strftime_now"));
  if (interp.config().strftime_now)
    return Value(interp.config().strftime_now(fmt));
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[512];
  size_t n =
      fmt.empty() ? 0 : std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
  return Value(std::string(buf, n));
}

// --- methods ---------------------------------------------------------------

class BoundMethod : public Callable {
 public:
  BoundMethod(Value self, std::string name)
      : self_(std::move(self)), name_(std::move(name)) {}
  StatusOr<Value> Call(Interpreter& interp, CallArgs& args) override {
    return CallMethod(interp, self_, name_, args);
  }
  std::string Name() const override { return name_; }

 private:
  Value self_;
  std::string name_;
};

}  // namespace

bool HasTest(const std::string& name) { return FindTest(name) != nullptr; }

StatusOr<bool> CallTest(Interpreter&, const std::string& name,
                        const Value& input, CallArgs& args) {
  const TestFn* t = FindTest(name);
  if (t == nullptr)
    return InvalidArgumentError("No test named '" + name + "'.");
  return (*t)(input, args);
}

Value FindGlobal(const std::string& name) {
  static const auto* globals = [] {
    auto* m = new std::unordered_map<std::string, Value>;
    auto add = [&](const char* n, Builtin::Fn fn) {
      (*m)[n] = Value::MakeCallable(std::make_shared<Builtin>(n, fn));
    };
    add("range", Range);
    add("dict", DictGlobal);
    add("namespace", NamespaceGlobal);
    add("raise_exception", RaiseException);
    add("strftime_now", StrftimeNow);
    return m;
  }();
  auto it = globals->find(name);
  return it == globals->end() ? Value::Undefined() : it->second;
}

bool IsSafeMethod(const Value& self, const std::string& name) {
  if (self.is_string()) return internal::IsStringMethod(name);
  if (self.is_dict()) {
    return name == "items" || name == "keys" || name == "values" ||
           name == "get";
  }
  if (self.is_sequence()) return name == "index" || name == "count";
  return false;
}

Value BindMethod(const Value& self, const std::string& name) {
  return Value::MakeCallable(std::make_shared<BoundMethod>(self, name));
}

StatusOr<Value> CallMethod(Interpreter&, const Value& self,
                           const std::string& name, CallArgs& a) {
  if (self.is_string()) return internal::StringMethod(self, name, a);
  if (self.is_dict()) {
    const Dict& d = self.dict();
    if (name == "get") {
      ASSIGN_OR_RETURN(const Value* key, Required(a, 0, "key", "get"));
      const Value* v = d.Find(*key);
      if (v != nullptr) return *v;
      const Value* dflt = Arg(a, 1, "default");
      return dflt ? *dflt : Value::None();
    }
    Value::List out;
    for (const auto& [k, v] : d.entries()) {
      if (name == "items") out.push_back(Value::MakeTuple({k, v}));
      if (name == "keys") out.push_back(k);
      if (name == "values") out.push_back(v);
    }
    return Value::MakeList(std::move(out));
  }
  if (self.is_sequence()) {
    ASSIGN_OR_RETURN(const Value* x, Required(a, 0, "value", name));
    const auto& items = self.list();
    int64_t count = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!Equals(items[i], *x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++count;
    }
    if (name == "index")
      return InvalidArgumentError("ValueError: value is not in list");
    return Value(count);
  }
  return TypeError("'" + self.TypeName() + "' object has no method " + name);
}

}  // namespace weft::chat
