// A GGUF metadata value: one of the 13 GGUF value types, arrays included
// (arrays of strings and nested arrays too). Values own their data.
//
// Thread safety: values; no shared state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace weft::gguf {

// On-disk ids of `enum gguf_type`.
enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};
inline constexpr uint32_t kNumValueTypes = 13;

std::string_view ValueTypeName(ValueType t);

class Value;

// An array: every element has `elem_type` (itself possibly kArray).
struct Array {
  ValueType elem_type = ValueType::kUint8;
  std::vector<Value> items;
};

class Value {
 public:
  // The alternatives are in ValueType order, so index() == type id.
  using Storage =
      std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t,
                   float, bool, std::string, Array, uint64_t, int64_t, double>;

  Value() : v_(uint8_t{0}) {}
  template <typename T>
  explicit Value(T v) : v_(std::move(v)) {}
  explicit Value(const char* s) : v_(std::string(s)) {}

  ValueType type() const { return static_cast<ValueType>(v_.index()); }
  const Storage& storage() const { return v_; }
  Storage& storage() { return v_; }

  bool is_integer() const;  // any of the 8 integer types
  bool is_float() const;    // float32 or float64

  // REQUIRES: the matching type (checked).
  const std::string& str() const { return std::get<std::string>(v_); }
  const Array& array() const { return std::get<Array>(v_); }

  // For integer types: the value as int64 / uint64 (bit pattern preserved
  // for uint64 values above INT64_MAX in AsInt64).
  int64_t AsInt64() const;
  uint64_t AsUint64() const;
  double AsDouble() const;  // integer or float types

  // Short human form: 42, 1.5, "text", [3 x string].
  std::string DebugString(size_t max_items = 8) const;

  friend bool operator==(const Value& a, const Value& b);

 private:
  Storage v_;
};

bool operator==(const Array& a, const Array& b);

}  // namespace weft::gguf
