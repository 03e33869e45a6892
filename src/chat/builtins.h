// jinja2's built-in filters, tests and globals, and the Python methods of
// str/dict/list that templates call, as the interpreter dispatches them.
// Internal to src/chat.
//
// Thread safety: stateless functions; the interpreter passed in is the
// caller's.
#pragma once

#include <string>

#include "chat/interpreter.h"
#include "chat/value.h"
#include "util/status.h"

namespace weft::chat {

// The status code of errors raised by the template's raise_exception().
inline constexpr StatusCode kRaisedExceptionCode =
    StatusCode::kFailedPrecondition;

bool HasFilter(const std::string& name);
bool HasTest(const std::string& name);

// input|name(args...).
StatusOr<Value> CallFilter(Interpreter& interp, const std::string& name,
                           const Value& input, CallArgs& args);
// input is name(args...).
StatusOr<bool> CallTest(Interpreter& interp, const std::string& name,
                        const Value& input, CallArgs& args);
// self.name(args...) for IsSafeMethod(self, name).
StatusOr<Value> CallMethod(Interpreter& interp, const Value& self,
                           const std::string& name, CallArgs& args);
// A global function (range, dict, namespace, raise_exception,
// strftime_now, cycler, joiner); undefined when `name` is not one.
Value FindGlobal(const std::string& name);

}  // namespace weft::chat
