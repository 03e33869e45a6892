// Compiles a structured-output constraint once per distinct constraint:
// a process-wide LRU of compiled grammars keyed by the constraint's kind
// and canonical text (a JSON Schema or choice list re-serialized
// compactly, keys in the order written; regex and GBNF as given).
//
//   StatusOr<std::shared_ptr<const Grammar>> g =
//       CompileConstraint(ConstraintKind::kJsonSchema, R"({"type": "string"})");
//
// Errors are those of the compilers (INVALID_ARGUMENT naming what is not
// supported); they are not cached.
//
// Thread safety: GrammarCache is thread-safe (one mutex; compiles run
// outside it, so two threads may compile the same text once each).
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "sampling/grammar.h"
#include "util/enum_name.h"
#include "util/status.h"

namespace weft::sampling {

enum class ConstraintKind {
  kJsonSchema,  // a JSON Schema (schema_grammar.h)
  kRegex,       // regex_grammar.h
  kChoice,      // a JSON array of strings (gbnf.h's CompileChoice)
  kGbnf,        // gbnf.h
};

// "json_schema", "regex", "choice", "grammar" (the request forms' names).
// Inline: params.cc names it without linking the compilers.
inline const char* ConstraintKindName(ConstraintKind kind) {
  static constexpr const char* kNames[] = {"json_schema", "regex", "choice",
                                           "grammar"};
  return EnumName<ConstraintKind::kGbnf>(kind, kNames, "unknown");
}

class GrammarCache {
 public:
  static constexpr size_t kDefaultCapacity = 64;

  explicit GrammarCache(size_t capacity = kDefaultCapacity) : capacity_(capacity) {}
  // The process-wide cache.
  static GrammarCache& Global();

  // The cached grammar for `key`, else compile() (cached if it succeeds).
  StatusOr<std::shared_ptr<const Grammar>> GetOrCompile(
      const std::string& key,
      const std::function<StatusOr<std::shared_ptr<const Grammar>>()>& compile);
  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const Grammar>>;
  const size_t capacity_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first; guarded by mu_
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;  // guarded by mu_
};

// Canonical text of a constraint (see the top of this file), or the
// INVALID_ARGUMENT of malformed JSON.
StatusOr<std::string> CanonicalConstraint(ConstraintKind kind, std::string_view spec);

// Compiles `spec` through GrammarCache::Global().
StatusOr<std::shared_ptr<const Grammar>> CompileConstraint(ConstraintKind kind,
                                                           std::string_view spec);

}  // namespace weft::sampling
