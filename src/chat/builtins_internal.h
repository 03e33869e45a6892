// Internal to src/chat: argument helpers and the larger filter and str
// method implementations, shared by filters.cc (the filter table),
// filter_impls.cc, methods.cc and str_methods.cc.
//
// Thread safety: stateless functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chat/interpreter.h"
#include "chat/value.h"
#include "util/status.h"

namespace weft::chat::internal {

// Positional argument `i` or keyword `name`; nullptr when neither is given.
const Value* Arg(const CallArgs& a, size_t i, const char* name);

// The argument or a TypeError naming `fn`.
StatusOr<const Value*> Required(const CallArgs& a, size_t i, const char* name,
                                const std::string& fn);
StatusOr<std::string> StrArg(const CallArgs& a, size_t i, const char* name,
                             const std::string& fn);

bool BoolArg(const CallArgs& a, size_t i, const char* name, bool dflt);

StatusOr<std::string> StrInput(const Value& v);

// Key for sorting/unique with case folding of strings.
Value Fold(const Value& v, bool case_sensitive);

// make_attrgetter: "a.b.0" paths, integer parts looked up as integers.
StatusOr<Value> GetPath(const Value& item, const Value* attribute);

Status SortValues(std::vector<Value>* items,
                  const std::function<StatusOr<Value>(const Value&)>& key,
                  bool reverse);

StatusOr<Value> ToJsonFilter(Interpreter&, const Value& v, CallArgs& a);

StatusOr<Value> Indent(Interpreter&, const Value& v, CallArgs& a);

StatusOr<Value> Join(Interpreter&, const Value& v, CallArgs& a);

StatusOr<Value> Replace(Interpreter&, const Value& v, CallArgs& a);

StatusOr<Value> Round(Interpreter&, const Value& v, CallArgs& a);

// Python float(str): strips whitespace, accepts inf/nan forms.
std::optional<double> ParseFloat(std::string_view s);

StatusOr<Value> IntFilter(Interpreter&, const Value& v, CallArgs& a);

StatusOr<Value> FloatFilter(Interpreter&, const Value& v, CallArgs& a);

// select/reject/selectattr/rejectattr.
StatusOr<Value> SelectOrReject(Interpreter& in, const Value& v, CallArgs& a,
                               bool select, bool attr);

StatusOr<Value> Map(Interpreter& in, const Value& v, CallArgs& a);

StatusOr<Value> MinMax(const Value& v, CallArgs& a, bool is_max);

std::string TitleFilter(const std::string& s);

// Python str methods: s.name(args) for name in StringMethodNames().
bool IsStringMethod(const std::string& name);
StatusOr<Value> StringMethod(const Value& self, const std::string& name,
                             CallArgs& a);

}  // namespace weft::chat::internal
