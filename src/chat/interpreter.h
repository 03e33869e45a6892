// Tree-walking evaluator for parsed templates (ast.h) with jinja2's runtime
// semantics as Hugging Face configures it (ImmutableSandboxedEnvironment,
// default Undefined, loopcontrols): scoping (for-loop iterations and macros
// get their own scope; top-level and if-blocks share one), `loop` variables,
// macros with defaults/kwargs/caller, namespaces, and bounded resources.
//
// Thread safety: one Interpreter renders one template on one thread; create
// one per Render call.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/value.h"
#include "util/status.h"

namespace weft::chat {

// Limits and hooks for one render. Exceeding a limit fails the render with
// ResourceExhausted; nothing crashes.
struct RenderConfig {
  // Most nested macro calls (recursion depth).
  int max_call_depth = 64;
  // Most nested expression/statement evaluations (bounds C++ stack use).
  int max_eval_depth = 800;
  // Most for-loop iterations in one render, all loops together.
  int64_t max_loop_iterations = 1000000;
  // Deepest nesting of lists/dicts a template may build.
  int max_value_depth = 256;
  // Longest string (output, captured block or computed string), in bytes.
  size_t max_output_bytes = size_t{16} << 20;
  // strftime_now(format) for templates; null: the current local time.
  std::function<std::string(const std::string& format)> strftime_now;
};

// A variable scope; lookups fall back to the parent chain.
struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
};

class Interpreter {
 public:
  explicit Interpreter(const RenderConfig& config) : config_(config) {}
  // Breaks the reference cycles of macros (scope -> macro -> scope).
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  // Renders `body` with `context` (a dict) as the top-level variables.
  StatusOr<std::string> Render(const std::vector<NodePtr>& body,
                               const Value& context);

  const RenderConfig& config() const { return config_; }
  // Calls any callable value (macro, builtin, bound method).
  StatusOr<Value> CallValue(const Value& fn, CallArgs& args);
  // Runs a macro (or call-block body) node with bound arguments.
  StatusOr<Value> CallMacro(const Node& macro, std::shared_ptr<Scope> closure,
                            CallArgs& args, const Value& caller);
  // Fails when a string of `size` bytes would pass the output limit.
  Status CheckSize(size_t size) const;

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Status Exec(const std::vector<NodePtr>& body,
              const std::shared_ptr<Scope>& scope, std::string* out);
  Status ExecNode(const Node& n, const std::shared_ptr<Scope>& scope,
                  std::string* out);
  Status ExecFor(const Node& n, const std::shared_ptr<Scope>& scope,
                 std::string* out);
  Status Assign(const Node& target, const Value& v, Scope* scope);
  StatusOr<Value> Eval(const Node& n, const std::shared_ptr<Scope>& scope);
  StatusOr<Value> EvalInner(const Node& n, const std::shared_ptr<Scope>& scope);
  // EvalInner's longer cases: obj[key] and obj[a:b:c]; a binary operator
  // (and/or short-circuit); a literal string concatenation, list, tuple or dict.
  StatusOr<Value> EvalGetitem(const Node& n, const std::shared_ptr<Scope>& scope);
  StatusOr<Value> EvalBinary(const Node& n, const std::shared_ptr<Scope>& scope);
  StatusOr<Value> EvalCollection(const Node& n, const std::shared_ptr<Scope>& scope);
  StatusOr<Value> EvalCompare(const Node& n,
                              const std::shared_ptr<Scope>& scope);
  StatusOr<Value> EvalFilter(const Node& n, const std::shared_ptr<Scope>& scope,
                             const Value* input);
  Status EvalArgs(const Node& n, const std::shared_ptr<Scope>& scope,
                  CallArgs* args);
  Value Lookup(const std::string& name, const Scope* scope) const;
  Status Append(std::string* out, std::string_view s) const;

  const RenderConfig& config_;
  std::shared_ptr<Scope> root_;
  // Scopes that macros close over; cleared at the end.
  std::vector<std::weak_ptr<Scope>> closure_scopes_;
  Flow flow_ = Flow::kNormal;
  int eval_depth_ = 0;
  int call_depth_ = 0;
  int64_t loop_iterations_ = 0;
};

// Line-tagged render error: "template error at line N: msg" (keeps the
// code; raised exceptions pass through unchanged).
Status AtLine(const Status& s, int line);

}  // namespace weft::chat
