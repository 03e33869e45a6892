// Python/jinja2 semantics of the template operators on Values: arithmetic,
// attribute and item access (sandboxed: unsafe methods are undefined),
// slicing, iteration, `in`, len(). Internal to src/chat.
//
// Thread safety: pure functions (Values follow value.h's rules).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "chat/value.h"
#include "util/status.h"

namespace weft::chat {

// The error raised when an undefined value is used: its hint, e.g.
// "'x' is undefined".
Status UndefinedError(const Value& v);
// A runtime TypeError-style error.
Status TypeError(const std::string& msg);

// a <op> b for + - * / // % ** (strings and lists for + and *). Results
// longer than `max_bytes` (strings) or `max_items` (lists) fail.
StatusOr<Value> BinaryOp(const std::string& op, const Value& a, const Value& b,
                         size_t max_bytes);
StatusOr<Value> Negate(const Value& a, bool negative);

// obj.name: methods first (bound), then dict keys / namespace attributes;
// undefined (with a hint) when absent. Errors only when obj is undefined.
StatusOr<Value> GetAttr(const Value& obj, const std::string& name);
// obj[key]: items first, then methods for string keys; undefined when absent.
StatusOr<Value> GetItem(const Value& obj, const Value& key);
// obj[start:stop:step] on str (code points), list and tuple.
StatusOr<Value> SliceValue(const Value& obj, const Value& start,
                           const Value& stop, const Value& step);

// Items of a for loop / filter input: list and tuple items, dict keys,
// string code points; undefined iterates as empty.
StatusOr<std::vector<Value>> Iterate(const Value& v);
// item in container.
StatusOr<bool> Contains(const Value& container, const Value& item);
// len(v); undefined is 0.
StatusOr<int64_t> Length(const Value& v);

// A method of a built-in type that templates may call (str.strip,
// dict.items, ...). Mutating methods are absent (immutable sandbox).
bool IsSafeMethod(const Value& self, const std::string& name);
// A callable Value binding `self` to method `name`.
Value BindMethod(const Value& self, const std::string& name);

}  // namespace weft::chat
