#include "gguf/value.h"

#include <cstring>
#include <limits>

#include "util/check.h"
#include "util/enum_name.h"
#include "util/strings.h"

namespace weft::gguf {

std::string_view ValueTypeName(ValueType t) {
  // Indexed by the GGUF type code (0 .. 12).
  static constexpr std::string_view kNames[] = {
      "uint8", "int8",   "uint16", "int16",  "uint32", "int32",  "float32",
      "bool",  "string", "array",  "uint64", "int64",  "float64"};
  return EnumName<ValueType::kFloat64>(t, kNames, "unknown");
}

bool Value::is_integer() const {
  switch (type()) {
    case ValueType::kUint8:
    case ValueType::kInt8:
    case ValueType::kUint16:
    case ValueType::kInt16:
    case ValueType::kUint32:
    case ValueType::kInt32:
    case ValueType::kUint64:
    case ValueType::kInt64:
      return true;
    default:
      return false;
  }
}

bool Value::is_float() const {
  return type() == ValueType::kFloat32 || type() == ValueType::kFloat64;
}

namespace {

// The stored number as R (the bool alternative never counts; with
// kIntegers, neither do floats); CHECK-fails with `error` otherwise.
template <typename R, bool kIntegers>
R NumberAs(const Value::Storage& v, const char* error) {
  return std::visit(
      [error](const auto& x) -> R {
        using T = std::decay_t<decltype(x)>;
        constexpr bool kNumber = kIntegers ? std::is_integral_v<T> : std::is_arithmetic_v<T>;
        if constexpr (kNumber && !std::is_same_v<T, bool>) {
          return static_cast<R>(x);
        } else {
          CHECK(false) << error;
          return 0;
        }
      },
      v);
}

}  // namespace

int64_t Value::AsInt64() const {
  return NumberAs<int64_t, true>(v_, "AsInt64 on a non-integer GGUF value");
}

uint64_t Value::AsUint64() const {
  return NumberAs<uint64_t, true>(v_, "AsUint64 on a non-integer GGUF value");
}

double Value::AsDouble() const {
  return NumberAs<double, false>(v_, "AsDouble on a non-numeric GGUF value");
}

std::string Value::DebugString(size_t max_items) const {
  switch (type()) {
    case ValueType::kString: {
      std::string out(1, '"');
      out.append(CEscape(str(), 80));
      out.push_back('"');
      return out;
    }
    case ValueType::kBool:
      return std::get<bool>(v_) ? "true" : "false";
    case ValueType::kFloat32:
      return StrFormat("%.9g", static_cast<double>(std::get<float>(v_)));
    case ValueType::kFloat64:
      return StrFormat("%.17g", std::get<double>(v_));
    case ValueType::kUint64:
      return StrFormat("%llu", static_cast<unsigned long long>(AsUint64()));
    case ValueType::kArray: {
      const Array& a = array();
      if (a.items.size() > max_items) {
        return StrFormat("[%zu x %s]", a.items.size(),
                         std::string(ValueTypeName(a.elem_type)).c_str());
      }
      std::string out = "[";
      for (size_t i = 0; i < a.items.size(); ++i) {
        if (i > 0) out += ", ";
        out += a.items[i].DebugString(max_items);
      }
      return out + "]";
    }
    default:
      return StrFormat("%lld", static_cast<long long>(AsInt64()));
  }
}

namespace {

// Floats compare by bit pattern so that NaN payloads round-trip equal.
template <typename F>
bool SameBits(F a, F b) {
  return std::memcmp(&a, &b, sizeof(F)) == 0;
}

}  // namespace

bool operator==(const Value& a, const Value& b) {
  if (a.type() != b.type()) return false;
  switch (a.type()) {
    case ValueType::kFloat32:
      return SameBits(std::get<float>(a.storage()),
                      std::get<float>(b.storage()));
    case ValueType::kFloat64:
      return SameBits(std::get<double>(a.storage()),
                      std::get<double>(b.storage()));
    case ValueType::kArray:
      return a.array() == b.array();
    default:
      return a.storage() == b.storage();
  }
}

bool operator==(const Array& a, const Array& b) {
  if (a.elem_type != b.elem_type || a.items.size() != b.items.size()) {
    return false;
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!(a.items[i] == b.items[i])) return false;
  }
  return true;
}

}  // namespace weft::gguf
