#include "chat/value.h"

#include <algorithm>
#include <cmath>

#include "util/check.h"

namespace weft::chat {

const Value* CallArgs::Kwarg(std::string_view name) const {
  for (const auto& [k, v] : kwargs) {
    if (k == name) return &v;
  }
  return nullptr;
}

const Value* Dict::Find(std::string_view key) const {
  auto it = string_index_.find(std::string(key));
  return it == string_index_.end() ? nullptr : &entries_[it->second].second;
}

const Value* Dict::Find(const Value& key) const {
  if (key.is_string()) return Find(std::string_view(key.str()));
  for (const auto& [k, v] : entries_) {
    if (!k.is_string() && Equals(k, key)) return &v;
  }
  return nullptr;
}

void Dict::Set(Value key, Value value) {
  if (key.is_string()) {
    auto [it, inserted] = string_index_.try_emplace(key.str(), entries_.size());
    if (!inserted) {
      entries_[it->second].second = std::move(value);
      return;
    }
    entries_.emplace_back(std::move(key), std::move(value));
    return;
  }
  for (auto& [k, v] : entries_) {
    if (!k.is_string() && Equals(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

namespace {
uint16_t DepthOf(const Value::List& items) {
  int d = 0;
  for (const Value& v : items) d = std::max(d, v.nesting());
  return static_cast<uint16_t>(std::min(d + 1, 65535));
}
uint16_t DepthOf(const Dict& dict) {
  int d = 0;
  for (const auto& [k, v] : dict.entries()) {
    d = std::max({d, k.nesting(), v.nesting()});
  }
  return static_cast<uint16_t>(std::min(d + 1, 65535));
}
}  // namespace

Value Value::Undefined(std::string hint) {
  Value v;
  v.s_ = std::move(hint);
  return v;
}

template <typename T>
Value Value::MakeContainer(ValueKind kind, T contents, std::shared_ptr<T> Value::*field) {
  Value v;
  v.kind_ = kind;
  v.depth_ = DepthOf(contents);
  v.*field = std::make_shared<T>(std::move(contents));
  return v;
}

Value Value::MakeList(List items) {
  return MakeContainer(ValueKind::kList, std::move(items), &Value::list_);
}

Value Value::MakeTuple(List items) {
  return MakeContainer(ValueKind::kTuple, std::move(items), &Value::list_);
}

Value Value::MakeDict(Dict d) {
  return MakeContainer(ValueKind::kDict, std::move(d), &Value::dict_);
}

Value Value::MakeNamespace(Dict d) {
  return MakeContainer(ValueKind::kNamespace, std::move(d), &Value::dict_);
}

Value Value::MakeCallable(std::shared_ptr<Callable> fn) {
  Value v;
  v.kind_ = ValueKind::kCallable;
  v.fn_ = std::move(fn);
  return v;
}

Value Value::Markup(std::string s) {
  Value v(std::move(s));
  v.safe_ = true;
  return v;
}

bool Value::boolean() const {
  CHECK(is_bool());
  return b_;
}

int64_t Value::integer() const {
  CHECK(is_int() || is_bool());
  return is_bool() ? (b_ ? 1 : 0) : i_;
}

double Value::number() const {
  CHECK(is_number());
  if (is_float()) return f_;
  return static_cast<double>(integer());
}

const std::string& Value::str() const {
  CHECK(is_string());
  return s_;
}

const Value::List& Value::list() const {
  CHECK(is_sequence());
  return *list_;
}

const Dict& Value::dict() const {
  CHECK(is_dict() || is_namespace());
  return *dict_;
}

Callable& Value::callable() const {
  CHECK(is_callable());
  return *fn_;
}

Value::List& Value::mutable_list() {
  CHECK(is_sequence());
  return *list_;
}

Dict& Value::mutable_dict() {
  CHECK(is_dict() || is_namespace());
  return *dict_;
}

bool Value::Truthy() const {
  switch (kind_) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return false;
    case ValueKind::kBool:
      return b_;
    case ValueKind::kInt:
      return i_ != 0;
    case ValueKind::kFloat:
      return f_ != 0.0;
    case ValueKind::kString:
      return !s_.empty();
    case ValueKind::kList:
    case ValueKind::kTuple:
      return !list_->empty();
    case ValueKind::kDict:
      return !dict_->empty();
    case ValueKind::kNamespace:
    case ValueKind::kCallable:
      return true;
  }
  return false;
}

const std::string& Value::TypeName() const {
  static const std::string* kNames = new std::string[11]{
      "Undefined", "NoneType", "bool", "int",       "float",   "str",
      "list",      "tuple",    "dict", "Namespace", "function"};
  return kNames[static_cast<int>(kind_)];
}

bool Equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() == b.number();
    return a.integer() == b.integer();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case ValueKind::kUndefined:
    case ValueKind::kNone:
      return true;
    case ValueKind::kString:
      return a.str() == b.str();
    case ValueKind::kList:
    case ValueKind::kTuple: {
      const auto& x = a.list();
      const auto& y = b.list();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!Equals(x[i], y[i])) return false;
      }
      return true;
    }
    case ValueKind::kDict: {
      const Dict& x = a.dict();
      const Dict& y = b.dict();
      if (x.size() != y.size()) return false;
      for (const auto& [k, v] : x.entries()) {
        const Value* other = y.Find(k);
        if (other == nullptr || !Equals(v, *other)) return false;
      }
      return true;
    }
    case ValueKind::kNamespace:
      return &a.dict() == &b.dict();
    case ValueKind::kCallable:
      return &a.callable() == &b.callable();
    default:
      return false;
  }
}

StatusOr<bool> LessThan(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.number() < b.number();
    return a.integer() < b.integer();
  }
  if (a.is_string() && b.is_string()) return a.str() < b.str();
  if (a.kind() == b.kind() && a.is_sequence()) {
    const auto& x = a.list();
    const auto& y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Equals(x[i], y[i])) continue;
      return LessThan(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  return InvalidArgumentError("'<' not supported between instances of '" +
                              a.TypeName() + "' and '" + b.TypeName() + "'");
}

Value DictOf(std::initializer_list<std::pair<std::string, Value>> items) {
  Dict d;
  for (const auto& [k, v] : items) d.Set(Value(k), v);
  return Value::MakeDict(std::move(d));
}

Value ListOf(std::initializer_list<Value> items) {
  return Value::MakeList(Value::List(items));
}

}  // namespace weft::chat
