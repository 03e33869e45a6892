#include "chat/interpreter.h"

#include "chat/builtins.h"
#include "chat/interpreter_internal.h"
#include "chat/ops.h"
#include "chat/pystr.h"
#include "util/strings.h"

namespace weft::chat {
namespace {

using internal::DepthGuard;
using internal::TooDeep;

// A macro (or the body of a call block, as `caller`) closed over the scope
// where it was defined.
class MacroCallable : public Callable {
 public:
  MacroCallable(const Node* node, std::shared_ptr<Scope> closure)
      : node_(node), closure_(std::move(closure)) {}
  StatusOr<Value> Call(Interpreter& interp, CallArgs& args) override {
    return interp.CallMacro(*node_, closure_, args, Value());
  }
  std::string Name() const override {
    return node_->kind == NodeKind::kMacro ? node_->name : "caller";
  }

 private:
  const Node* node_;
  std::shared_ptr<Scope> closure_;
};

// loop.cycle(a, b, ...) for one iteration.
class LoopCycle : public Callable {
 public:
  explicit LoopCycle(int64_t index0) : index0_(index0) {}
  StatusOr<Value> Call(Interpreter&, CallArgs& args) override {
    if (args.args.empty()) return TypeError("no items for cycling given");
    return args.args[static_cast<size_t>(index0_) % args.args.size()];
  }
  std::string Name() const override { return "cycle"; }

 private:
  int64_t index0_;
};

// Whether `v` holds a namespace (bounded walk; too deep counts as yes).
bool ContainsNamespace(const Value& v, int depth) {
  if (v.is_namespace() || depth > 64) return true;
  if (v.nesting() <= 1) return false;  // scalars or a flat list/dict
  if (v.is_sequence()) {
    for (const Value& x : v.list()) {
      if (x.nesting() > 0 && ContainsNamespace(x, depth + 1)) return true;
    }
    if (v.nesting() > 0) {
      for (const Value& x : v.list()) {
        if (x.is_namespace()) return true;
      }
    }
  } else if (v.is_dict()) {
    for (const auto& [k, x] : v.dict().entries()) {
      if (x.is_namespace() ||
          (x.nesting() > 0 && ContainsNamespace(x, depth + 1))) {
        return true;
      }
    }
  }
  return false;
}

}  // namespace

Status AtLine(const Status& s, int line) {
  if (s.ok() || s.code() == kRaisedExceptionCode ||
      s.message().rfind("template error at line", 0) == 0) {
    return s;
  }
  return Status(s.code(), StrFormat("template error at line %d: %s", line,
                                    s.message().c_str()));
}

StatusOr<std::string> Interpreter::Render(const std::vector<NodePtr>& body,
                                          const Value& context) {
  root_ = std::make_shared<Scope>();
  if (context.is_dict()) {
    for (const auto& [k, v] : context.dict().entries()) {
      if (k.is_string()) root_->vars[k.str()] = v;
    }
  }
  std::string out;
  RETURN_IF_ERROR(Exec(body, root_, &out));
  return out;
}

Interpreter::~Interpreter() {
  for (auto& weak : closure_scopes_) {
    if (auto scope = weak.lock()) scope->vars.clear();
  }
  if (root_) root_->vars.clear();
}

Status Interpreter::CheckSize(size_t size) const {
  if (size > config_.max_output_bytes) {
    return ResourceExhaustedError(
        StrFormat("template output exceeds the limit of %zu bytes",
                  config_.max_output_bytes));
  }
  return OkStatus();
}

Status Interpreter::Append(std::string* out, std::string_view s) const {
  RETURN_IF_ERROR(CheckSize(out->size() + s.size()));
  out->append(s);
  return OkStatus();
}

Value Interpreter::Lookup(const std::string& name, const Scope* scope) const {
  for (const Scope* s = scope; s != nullptr; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return it->second;
  }
  Value g = FindGlobal(name);
  if (!g.is_undefined()) return g;
  return Value::Undefined("'" + name + "' is undefined");
}

Status Interpreter::Exec(const std::vector<NodePtr>& body,
                         const std::shared_ptr<Scope>& scope,
                         std::string* out) {
  DepthGuard g(&eval_depth_, config_.max_eval_depth);
  if (!g.ok) return TooDeep();
  for (const NodePtr& n : body) {
    RETURN_IF_ERROR(ExecNode(*n, scope, out));
    if (flow_ != Flow::kNormal) break;
  }
  return OkStatus();
}

Status Interpreter::ExecNode(const Node& n, const std::shared_ptr<Scope>& scope,
                             std::string* out) {
  switch (n.kind) {
    case NodeKind::kData:
      return Append(out, n.value.str());
    case NodeKind::kOutput: {
      ASSIGN_OR_RETURN(Value v, Eval(*n.a, scope));
      return AtLine(Append(out, PyStr(v)), n.line);
    }
    case NodeKind::kIf: {
      ASSIGN_OR_RETURN(Value test, Eval(*n.a, scope));
      return Exec(test.Truthy() ? n.body : n.else_body, scope, out);
    }
    case NodeKind::kFor:
      return ExecFor(n, scope, out);
    case NodeKind::kSet: {
      ASSIGN_OR_RETURN(Value v, Eval(*n.a, scope));
      return AtLine(Assign(*n.b, v, scope.get()), n.line);
    }
    case NodeKind::kSetBlock:
    case NodeKind::kFilterBlock: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      std::string captured;
      RETURN_IF_ERROR(Exec(n.body, inner, &captured));
      Value v(std::move(captured));
      if (n.a) {
        ASSIGN_OR_RETURN(v, EvalFilter(*n.a, scope, &v));
      }
      if (n.kind == NodeKind::kFilterBlock) return Append(out, PyStr(v));
      return AtLine(Assign(*n.b, v, scope.get()), n.line);
    }
    case NodeKind::kMacro:
      closure_scopes_.push_back(scope);
      scope->vars[n.name] =
          Value::MakeCallable(std::make_shared<MacroCallable>(&n, scope));
      return OkStatus();
    case NodeKind::kCallBlock: {
      const Node& call = *n.a;
      ASSIGN_OR_RETURN(Value fn, Eval(*call.a, scope));
      CallArgs args;
      RETURN_IF_ERROR(EvalArgs(call, scope, &args));
      closure_scopes_.push_back(scope);
      args.kwargs.emplace_back(
          "caller",
          Value::MakeCallable(std::make_shared<MacroCallable>(&n, scope)));
      auto r = CallValue(fn, args);
      if (!r.ok()) return AtLine(r.status(), n.line);
      return Append(out, PyStr(*r));
    }
    case NodeKind::kWith: {
      auto inner = std::make_shared<Scope>();
      inner->parent = scope;
      for (size_t i = 0; i < n.params.size(); ++i) {
        ASSIGN_OR_RETURN(Value v, Eval(*n.defaults[i], scope));
        inner->vars[n.params[i]] = std::move(v);
      }
      return Exec(n.body, inner, out);
    }
    case NodeKind::kBreak:
      flow_ = Flow::kBreak;
      return OkStatus();
    case NodeKind::kContinue:
      flow_ = Flow::kContinue;
      return OkStatus();
    case NodeKind::kScope:
      return Exec(n.body, scope, out);
    default:
      return InternalError(StrFormat("line %d: not a statement", n.line));
  }
}

Status Interpreter::ExecFor(const Node& n, const std::shared_ptr<Scope>& scope,
                            std::string* out) {
  ASSIGN_OR_RETURN(Value iterable, Eval(*n.a, scope));
  auto items_or = Iterate(iterable);
  if (!items_or.ok()) return AtLine(items_or.status(), n.line);
  std::vector<Value> items = std::move(items_or).value();
  if (n.c) {
    std::vector<Value> kept;
    for (Value& item : items) {
      auto tmp = std::make_shared<Scope>();
      tmp->parent = scope;
      RETURN_IF_ERROR(AtLine(Assign(*n.b, item, tmp.get()), n.line));
      ASSIGN_OR_RETURN(Value keep, Eval(*n.c, tmp));
      if (keep.Truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    auto inner = std::make_shared<Scope>();
    inner->parent = scope;
    return Exec(n.else_body, inner, out);
  }
  const int64_t length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    if (++loop_iterations_ > config_.max_loop_iterations) {
      return ResourceExhaustedError(StrFormat(
          "template error at line %d: more than %lld loop iterations", n.line,
          static_cast<long long>(config_.max_loop_iterations)));
    }
    auto iter = std::make_shared<Scope>();
    iter->parent = scope;
    const size_t idx = static_cast<size_t>(i);
    RETURN_IF_ERROR(AtLine(Assign(*n.b, items[idx], iter.get()), n.line));
    if (!n.uses_loop) {
      RETURN_IF_ERROR(Exec(n.body, iter, out));
      if (flow_ == Flow::kBreak) {
        flow_ = Flow::kNormal;
        break;
      }
      flow_ = Flow::kNormal;
      continue;
    }
    Dict loop;
    loop.Set("index", Value(i + 1));
    loop.Set("index0", Value(i));
    loop.Set("revindex", Value(length - i));
    loop.Set("revindex0", Value(length - i - 1));
    loop.Set("first", Value(i == 0));
    loop.Set("last", Value(i == length - 1));
    loop.Set("length", Value(length));
    loop.Set("depth", Value(1));
    loop.Set("depth0", Value(0));
    if (i > 0) loop.Set("previtem", items[idx - 1]);
    if (i + 1 < length) loop.Set("nextitem", items[idx + 1]);
    loop.Set("cycle", Value::MakeCallable(std::make_shared<LoopCycle>(i)));
    iter->vars["loop"] = Value::MakeDict(std::move(loop));
    RETURN_IF_ERROR(Exec(n.body, iter, out));
    if (flow_ == Flow::kBreak) {
      flow_ = Flow::kNormal;
      break;
    }
    flow_ = Flow::kNormal;
  }
  return OkStatus();
}

Status Interpreter::Assign(const Node& target, const Value& v, Scope* scope) {
  switch (target.kind) {
    case NodeKind::kName:
      scope->vars[target.name] = v;
      return OkStatus();
    case NodeKind::kTuple: {
      ASSIGN_OR_RETURN(std::vector<Value> items, Iterate(v));
      if (items.size() != target.items.size()) {
        return InvalidArgumentError(
            StrFormat("ValueError: cannot unpack %zu values into %zu names",
                      items.size(), target.items.size()));
      }
      for (size_t i = 0; i < items.size(); ++i) {
        RETURN_IF_ERROR(Assign(*target.items[i], items[i], scope));
      }
      return OkStatus();
    }
    case NodeKind::kNsRef: {
      Value ns = Lookup(target.name, scope);
      if (!ns.is_namespace()) {
        return InvalidArgumentError(
            "cannot assign attribute on non-namespace object");
      }
      if (ContainsNamespace(v, 0)) {
        // Would allow reference cycles; no real template needs it.
        return UnimplementedError("storing a namespace inside a namespace");
      }
      ns.mutable_dict().Set(target.value, v);
      return OkStatus();
    }
    default:
      return InvalidArgumentError("can't assign to this expression");
  }
}

StatusOr<Value> Interpreter::CallValue(const Value& fn, CallArgs& args) {
  if (fn.is_undefined()) return UndefinedError(fn);
  if (!fn.is_callable()) {
    return TypeError(
        StrFormat("'%s' object is not callable", fn.TypeName().c_str()));
  }
  return fn.callable().Call(*this, args);
}

StatusOr<Value> Interpreter::CallMacro(const Node& macro,
                                       std::shared_ptr<Scope> closure,
                                       CallArgs& args, const Value& caller) {
  DepthGuard g(&call_depth_, config_.max_call_depth);
  if (!g.ok) {
    return ResourceExhaustedError(
        StrFormat("template error at line %d: macro recursion deeper than %d",
                  macro.line, config_.max_call_depth));
  }
  auto scope = std::make_shared<Scope>();
  scope->parent = std::move(closure);
  std::vector<bool> used(args.kwargs.size(), false);
  const size_t first_default = macro.params.size() - macro.defaults.size();
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const std::string& p = macro.params[i];
    Value v;
    bool found = false;
    if (i < args.args.size()) {
      v = args.args[i];
      found = true;
    } else {
      for (size_t k = 0; k < args.kwargs.size(); ++k) {
        if (!used[k] && args.kwargs[k].first == p) {
          v = args.kwargs[k].second;
          used[k] = true;
          found = true;
          break;
        }
      }
    }
    if (!found) {
      if (i >= first_default) {
        ASSIGN_OR_RETURN(v, Eval(*macro.defaults[i - first_default], scope));
      } else {
        v = Value::Undefined("parameter '" + p + "' was not provided");
      }
    }
    scope->vars[p] = std::move(v);
  }
  Value::List varargs;
  for (size_t i = macro.params.size(); i < args.args.size(); ++i) {
    varargs.push_back(args.args[i]);
  }
  Dict kwargs;
  for (size_t k = 0; k < args.kwargs.size(); ++k) {
    if (used[k]) continue;
    if (args.kwargs[k].first == "caller") {
      scope->vars["caller"] = args.kwargs[k].second;
    } else {
      kwargs.Set(Value(args.kwargs[k].first), args.kwargs[k].second);
    }
  }
  if (!caller.is_undefined()) scope->vars["caller"] = caller;
  scope->vars["varargs"] = Value::MakeTuple(std::move(varargs));
  scope->vars["kwargs"] = Value::MakeDict(std::move(kwargs));
  std::string out;
  Status s = Exec(macro.body, scope, &out);
  flow_ = Flow::kNormal;
  RETURN_IF_ERROR(s);
  return Value(std::move(out));
}

}  // namespace weft::chat
