// Value: the data type of the chat-template interpreter. Models the Python
// objects a Jinja2 template sees: None, bool, int, float, str, list, tuple,
// dict (insertion ordered), plus interpreter-internal kinds: Undefined (a
// missing variable or attribute, with a hint for error messages), callables
// (macros, builtins, bound methods) and namespace() objects.
//
// Lists, tuples and dicts share their storage between copies (like Python
// references). Only the interpreter mutates shared storage, and only for
// namespace attributes, which must be visible through every copy; everything
// else is built once and then read.
//
// Thread safety: a Value and its copies must be used from one thread at a
// time (shared storage is not synchronized). Distinct Values built
// independently are independent.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/status.h"

namespace weft::chat {

enum class ValueKind {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,
  kTuple,
  kDict,
  kNamespace,  // namespace(): a dict whose attributes can be assigned
  kCallable,
};

class Value;
class Interpreter;

// Arguments of a call: positional then keyword, in call order.
struct CallArgs {
  std::vector<Value> args;
  std::vector<std::pair<std::string, Value>> kwargs;
  const Value* Kwarg(std::string_view name) const;
};

// Something a template can call: a macro, a global function, a bound method.
class Callable {
 public:
  virtual ~Callable() = default;
  virtual StatusOr<Value> Call(Interpreter& interp, CallArgs& args) = 0;
  virtual std::string Name() const = 0;
};

// An insertion-ordered dict with Python key equality (1 == 1.0 == True).
// String keys are indexed; other keys are found by a linear scan.
class Dict {
 public:
  // Defined after Value (clang needs Value complete here).
  size_t size() const;
  bool empty() const;
  const std::vector<std::pair<Value, Value>>& entries() const {
    return entries_;
  }
  // nullptr when absent.
  const Value* Find(const Value& key) const;
  const Value* Find(std::string_view key) const;
  // Inserts or replaces (keeping the original position, like Python).
  void Set(Value key, Value value);

 private:
  std::vector<std::pair<Value, Value>> entries_;
  std::unordered_map<std::string, size_t> string_index_;
};

class Value {
 public:
  using List = std::vector<Value>;

  Value() = default;                                    // Undefined
  Value(std::nullptr_t) : kind_(ValueKind::kNone) {}    // NOLINT
  Value(bool b) : kind_(ValueKind::kBool), b_(b) {}     // NOLINT
  Value(int v) : kind_(ValueKind::kInt), i_(v) {}       // NOLINT
  Value(int64_t v) : kind_(ValueKind::kInt), i_(v) {}   // NOLINT
  Value(double v) : kind_(ValueKind::kFloat), f_(v) {}  // NOLINT
  Value(std::string s)
      : kind_(ValueKind::kString), s_(std::move(s)) {}             // NOLINT
  Value(std::string_view s) : kind_(ValueKind::kString), s_(s) {}  // NOLINT
  Value(const char* s) : kind_(ValueKind::kString), s_(s) {}       // NOLINT

  static Value None() { return Value(nullptr); }
  // An undefined value; `hint` is the jinja2-style error message used when
  // it is used in a way that fails ("'x' is undefined").
  static Value Undefined(std::string hint = "");
  static Value MakeList(List items = {});
  static Value MakeTuple(List items);
  static Value MakeDict(Dict d = {});
  static Value MakeNamespace(Dict d = {});
  static Value MakeCallable(std::shared_ptr<Callable> fn);
  // A string marked safe (jinja2 Markup): `+` with a plain string escapes it.
  static Value Markup(std::string s);

  ValueKind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == ValueKind::kUndefined; }
  bool is_none() const { return kind_ == ValueKind::kNone; }
  bool is_bool() const { return kind_ == ValueKind::kBool; }
  bool is_int() const { return kind_ == ValueKind::kInt; }
  bool is_float() const { return kind_ == ValueKind::kFloat; }
  // int, float or bool (Python numbers.Number).
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind_ == ValueKind::kString; }
  bool is_list() const { return kind_ == ValueKind::kList; }
  bool is_tuple() const { return kind_ == ValueKind::kTuple; }
  bool is_sequence() const { return is_list() || is_tuple(); }
  bool is_dict() const { return kind_ == ValueKind::kDict; }
  bool is_namespace() const { return kind_ == ValueKind::kNamespace; }
  bool is_callable() const { return kind_ == ValueKind::kCallable; }
  bool is_safe() const { return safe_; }

  // REQUIRES: the matching kind (CHECKed).
  bool boolean() const;
  int64_t integer() const;  // int or bool
  double number() const;    // int, float or bool
  const std::string& str() const;
  const List& list() const;  // list or tuple
  const Dict& dict() const;  // dict or namespace
  Callable& callable() const;
  // Nesting depth of lists/tuples/dicts (0 for scalars), as built; a
  // namespace counts its contents at creation only.
  int nesting() const { return depth_; }
  // The hint of an undefined value.
  const std::string& undefined_hint() const { return s_; }

  // Mutable access for building values. For lists and dicts this writes to
  // the storage shared by all copies (used for namespaces and while
  // building a fresh value).
  List& mutable_list();
  Dict& mutable_dict();

  // Python truthiness.
  bool Truthy() const;
  // Python type name for messages: "str", "int", "dict", ...
  const std::string& TypeName() const;

 private:
  // A list, tuple, dict or namespace holding `contents` in `field`.
  template <typename T>
  static Value MakeContainer(ValueKind kind, T contents, std::shared_ptr<T> Value::*field);

  ValueKind kind_ = ValueKind::kUndefined;
  bool safe_ = false;
  uint16_t depth_ = 0;
  union {
    bool b_;
    int64_t i_ = 0;
    double f_;
  };
  std::string s_;  // string, or undefined hint
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Callable> fn_;
};

inline size_t Dict::size() const { return entries_.size(); }
inline bool Dict::empty() const { return entries_.empty(); }

// Python ==.
bool Equals(const Value& a, const Value& b);
// Python <, for numbers, strings and sequences; InvalidArgument otherwise.
StatusOr<bool> LessThan(const Value& a, const Value& b);

// Convenience builders for tests and for converting request data.
Value DictOf(std::initializer_list<std::pair<std::string, Value>> items);
Value ListOf(std::initializer_list<Value> items);

}  // namespace weft::chat
