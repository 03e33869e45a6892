#include "chat/ops.h"

#include <cmath>
#include <limits>

#include "chat/builtins.h"
#include "chat/pystr.h"

namespace weft::chat {
namespace {

std::string ObjName(const Value& v) {
  if (v.is_none()) return "None";
  return "'" + v.TypeName() + " object'";
}

StatusOr<Value> Repeat(const Value& seq, int64_t n, size_t max_bytes) {
  if (n < 0) n = 0;
  if (seq.is_string()) {
    const std::string& s = seq.str();
    if (!s.empty() && static_cast<uint64_t>(n) > max_bytes / s.size()) {
      return ResourceExhaustedError(
          "string repetition exceeds the output limit");
    }
    std::string out;
    out.reserve(s.size() * static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out += s;
    return Value(std::move(out));
  }
  const auto& items = seq.list();
  if (!items.empty() &&
      static_cast<uint64_t>(n) > max_bytes / 8 / items.size()) {
    return ResourceExhaustedError("list repetition exceeds the output limit");
  }
  Value::List out;
  for (int64_t i = 0; i < n; ++i)
    out.insert(out.end(), items.begin(), items.end());
  return seq.is_tuple() ? Value::MakeTuple(std::move(out))
                        : Value::MakeList(std::move(out));
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t FloorMod(int64_t a, int64_t b) {
  int64_t m = a % b;
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

// x ** y for y >= 0 by squaring, refusing what overflows int64.
StatusOr<Value> IntPow(int64_t x, int64_t y) {
  int64_t result = 1, base = x;
  for (int64_t e = y; e > 0; e >>= 1) {
    if ((e & 1) && __builtin_mul_overflow(result, base, &result)) {
      return OutOfRangeError("integer overflow in **");
    }
    if ((e >> 1) > 0 && __builtin_mul_overflow(base, base, &base)) {
      return OutOfRangeError("integer overflow in **");
    }
  }
  return Value(result);
}

StatusOr<Value> AddStrings(const Value& a, const Value& b, size_t max_bytes) {
  if (a.str().size() + b.str().size() > max_bytes) {
    return ResourceExhaustedError("string exceeds the output limit");
  }
  // markupsafe: Markup + str escapes the str.
  if (a.is_safe() || b.is_safe()) {
    std::string l = a.is_safe() ? a.str() : HtmlEscape(a.str());
    std::string r = b.is_safe() ? b.str() : HtmlEscape(b.str());
    return Value::Markup(l + r);
  }
  return Value(a.str() + b.str());
}

}  // namespace

Status UndefinedError(const Value& v) {
  std::string hint = v.undefined_hint();
  if (hint.empty()) hint = "a value is undefined";
  return InvalidArgumentError("UndefinedError: " + hint);
}

Status TypeError(const std::string& msg) {
  return InvalidArgumentError("TypeError: " + msg);
}

StatusOr<Value> BinaryOp(const std::string& op, const Value& a, const Value& b,
                         size_t max_bytes) {
  if (a.is_undefined()) return UndefinedError(a);
  if (b.is_undefined()) return UndefinedError(b);
  if (a.is_number() && b.is_number()) {
    bool ints = !a.is_float() && !b.is_float();
    if (ints) {
      int64_t x = a.integer(), y = b.integer(), r = 0;
      if (op == "+" && !__builtin_add_overflow(x, y, &r)) return Value(r);
      if (op == "-" && !__builtin_sub_overflow(x, y, &r)) return Value(r);
      if (op == "*" && !__builtin_mul_overflow(x, y, &r)) return Value(r);
      if (op == "//" || op == "%") {
        if (y == 0)
          return InvalidArgumentError(
              "ZeroDivisionError: integer "
              "division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) {
          return OutOfRangeError("integer overflow");
        }
        return Value(op == "//" ? FloorDiv(x, y) : FloorMod(x, y));
      }
      if (op == "**" && y >= 0) return IntPow(x, y);
      if (op == "+" || op == "-" || op == "*") {
        return OutOfRangeError("integer overflow");
      }
    }
    double x = a.number(), y = b.number();
    if (op == "+") return Value(x + y);
    if (op == "-") return Value(x - y);
    if (op == "*") return Value(x * y);
    if (op == "/") {
      if (y == 0)
        return InvalidArgumentError("ZeroDivisionError: division by zero");
      return Value(x / y);
    }
    if (op == "//" || op == "%") {
      if (y == 0)
        return InvalidArgumentError("ZeroDivisionError: float modulo");
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      if (op == "%") return Value(m);
      return Value(std::floor((x - m) / y + 0.5));
    }
    if (op == "**") return Value(std::pow(x, y));
  }
  if (op == "+") {
    if (a.is_string() && b.is_string()) return AddStrings(a, b, max_bytes);
    if (a.kind() == b.kind() && a.is_sequence()) {
      if (a.list().size() + b.list().size() > max_bytes / 8) {
        return ResourceExhaustedError("list exceeds the output limit");
      }
      Value::List items = a.list();
      items.insert(items.end(), b.list().begin(), b.list().end());
      return a.is_tuple() ? Value::MakeTuple(std::move(items))
                          : Value::MakeList(std::move(items));
    }
  }
  if (op == "*") {
    if ((a.is_string() || a.is_sequence()) && (b.is_int() || b.is_bool())) {
      return Repeat(a, b.integer(), max_bytes);
    }
    if ((b.is_string() || b.is_sequence()) && (a.is_int() || a.is_bool())) {
      return Repeat(b, a.integer(), max_bytes);
    }
  }
  return TypeError("unsupported operand type(s) for " + op + ": '" +
                   a.TypeName() + "' and '" + b.TypeName() + "'");
}

StatusOr<Value> Negate(const Value& a, bool negative) {
  if (a.is_undefined()) return UndefinedError(a);
  if (a.is_float()) return Value(negative ? -a.number() : a.number());
  if (a.is_int() || a.is_bool()) {
    int64_t v = a.integer();
    if (negative && v == std::numeric_limits<int64_t>::min()) {
      return OutOfRangeError("integer overflow");
    }
    return Value(negative ? -v : v);
  }
  return TypeError("bad operand type for unary " +
                   std::string(negative ? "-" : "+") + ": '" + a.TypeName() +
                   "'");
}

StatusOr<Value> GetAttr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (IsSafeMethod(obj, name)) return BindMethod(obj, name);
  if (obj.is_dict() || obj.is_namespace()) {
    const Value* v = obj.dict().Find(std::string_view(name));
    if (v != nullptr) return *v;
  }
  return Value::Undefined(ObjName(obj) + " has no attribute '" + name + "'");
}

StatusOr<Value> GetItem(const Value& obj, const Value& key) {
  if (obj.is_undefined()) return UndefinedError(obj);
  if (obj.is_dict()) {
    const Value* v = obj.dict().Find(key);
    if (v != nullptr) return *v;
  } else if ((obj.is_sequence() || obj.is_string()) &&
             (key.is_int() || key.is_bool())) {
    int64_t i = key.integer();
    if (obj.is_string()) {
      std::vector<uint32_t> cps = DecodeUtf8(obj.str());
      int64_t n = static_cast<int64_t>(cps.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        return Value(EncodeUtf8(cps, static_cast<size_t>(i),
                                static_cast<size_t>(i) + 1));
      }
    } else {
      int64_t n = static_cast<int64_t>(obj.list().size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.list()[static_cast<size_t>(i)];
    }
    return Value::Undefined(ObjName(obj) + " has no element " +
                            std::to_string(key.integer()));
  }
  if (key.is_string()) return GetAttr(obj, key.str());
  return Value::Undefined(ObjName(obj) + " has no element " + PyRepr(key));
}

StatusOr<Value> SliceValue(const Value& obj, const Value& start,
                           const Value& stop, const Value& step) {
  if (obj.is_undefined()) return UndefinedError(obj);
  auto idx = [](const Value& v,
                const char* what) -> StatusOr<std::optional<int64_t>> {
    if (v.is_undefined() || v.is_none()) return std::optional<int64_t>();
    if (v.is_int() || v.is_bool()) return std::optional<int64_t>(v.integer());
    return TypeError(std::string("slice ") + what + " must be an integer");
  };
  ASSIGN_OR_RETURN(auto b, idx(start, "start"));
  ASSIGN_OR_RETURN(auto e, idx(stop, "stop"));
  ASSIGN_OR_RETURN(auto s, idx(step, "step"));
  int64_t st = s.value_or(1);
  if (st == 0)
    return InvalidArgumentError("ValueError: slice step cannot be zero");
  std::vector<uint32_t> cps;
  int64_t n;
  if (obj.is_string()) {
    cps = DecodeUtf8(obj.str());
    n = static_cast<int64_t>(cps.size());
  } else if (obj.is_sequence()) {
    n = static_cast<int64_t>(obj.list().size());
  } else {
    return TypeError("'" + obj.TypeName() + "' object is not subscriptable");
  }
  // PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t lo = adjust(b, st < 0 ? n - 1 : 0);
  int64_t hi = adjust(e, st < 0 ? -1 : n);
  std::vector<int64_t> picks;
  if (st > 0) {
    for (int64_t i = lo; i < hi; i += st) picks.push_back(i);
  } else {
    for (int64_t i = lo; i > hi; i += st) picks.push_back(i);
  }
  if (obj.is_string()) {
    std::string out;
    for (int64_t i : picks) AppendUtf8(cps[static_cast<size_t>(i)], &out);
    return Value(std::move(out));
  }
  Value::List out;
  for (int64_t i : picks) out.push_back(obj.list()[static_cast<size_t>(i)]);
  return obj.is_tuple() ? Value::MakeTuple(std::move(out))
                        : Value::MakeList(std::move(out));
}

StatusOr<std::vector<Value>> Iterate(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return std::vector<Value>();
    case ValueKind::kList:
    case ValueKind::kTuple:
      return v.list();
    case ValueKind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, val] : v.dict().entries()) keys.push_back(k);
      return keys;
    }
    case ValueKind::kString: {
      std::vector<Value> out;
      std::vector<uint32_t> cps = DecodeUtf8(v.str());
      for (size_t i = 0; i < cps.size(); ++i) {
        out.emplace_back(EncodeUtf8(cps, i, i + 1));
      }
      return out;
    }
    default:
      return TypeError("'" + v.TypeName() + "' object is not iterable");
  }
}

StatusOr<bool> Contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (container.is_string()) {
    if (item.is_undefined()) return UndefinedError(item);
    if (!item.is_string()) {
      return TypeError("'in <string>' requires string as left operand, not " +
                       item.TypeName());
    }
    return container.str().find(item.str()) != std::string::npos;
  }
  if (container.is_sequence()) {
    for (const Value& x : container.list()) {
      if (Equals(x, item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return container.dict().Find(item) != nullptr;
  return TypeError("argument of type '" + container.TypeName() +
                   "' is not iterable");
}

StatusOr<int64_t> Length(const Value& v) {
  switch (v.kind()) {
    case ValueKind::kUndefined:
      return 0;
    case ValueKind::kString:
      return static_cast<int64_t>(CodePointCount(v.str()));
    case ValueKind::kList:
    case ValueKind::kTuple:
      return static_cast<int64_t>(v.list().size());
    case ValueKind::kDict:
      return static_cast<int64_t>(v.dict().size());
    default:
      return TypeError("object of type '" + v.TypeName() + "' has no len()");
  }
}

}  // namespace weft::chat
