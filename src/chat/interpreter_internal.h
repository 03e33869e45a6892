// Internal to src/chat: what the Interpreter's statement half
// (interpreter.cc) and expression half (interpreter_expr.cc) share.
//
// Thread safety: DepthGuard touches only the counter it is given.
#pragma once

#include "util/status.h"

namespace weft::chat::internal {

// Counts nesting on construction; the caller checks `ok`.
struct DepthGuard {
  int* depth;
  bool ok;
  DepthGuard(int* d, int limit) : depth(d), ok(++*d <= limit) {}
  ~DepthGuard() { --*depth; }
};

inline Status TooDeep() {
  return ResourceExhaustedError(
      "template evaluation nested too deeply (recursion limit)");
}

}  // namespace weft::chat::internal
