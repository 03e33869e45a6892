#include "sampling/grammar_cache.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/gbnf.h"
#include "sampling/regex_grammar.h"
#include "sampling/schema_grammar.h"

namespace weft::sampling {

GrammarCache& GrammarCache::Global() {
  static auto* cache = new GrammarCache();
  return *cache;
}

StatusOr<std::shared_ptr<const Grammar>> GrammarCache::GetOrCompile(
    const std::string& key,
    const std::function<StatusOr<std::shared_ptr<const Grammar>>()>& compile) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> g, compile());
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;
  lru_.emplace_front(key, g);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return g;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

StatusOr<std::string> CanonicalConstraint(ConstraintKind kind, std::string_view spec) {
  if (kind != ConstraintKind::kJsonSchema && kind != ConstraintKind::kChoice) {
    return std::string(spec);
  }
  const auto j = nlohmann::ordered_json::parse(spec, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("constraint is not valid JSON");
  if (kind == ConstraintKind::kChoice) {
    if (!j.is_array()) return InvalidArgumentError("choice: expected a JSON array of strings");
    for (const auto& c : j) {
      if (!c.is_string()) return InvalidArgumentError("choice: expected a JSON array of strings");
    }
  }
  return j.dump();
}

StatusOr<std::shared_ptr<const Grammar>> CompileConstraint(ConstraintKind kind,
                                                           std::string_view spec) {
  ASSIGN_OR_RETURN(std::string canonical, CanonicalConstraint(kind, spec));
  const std::string key = std::to_string(static_cast<int>(kind)) + ":" + canonical;
  return GrammarCache::Global().GetOrCompile(key, [&]() -> StatusOr<std::shared_ptr<const Grammar>> {
    switch (kind) {
      case ConstraintKind::kJsonSchema:
        return CompileJsonSchema(canonical);
      case ConstraintKind::kRegex:
        return CompileRegex(canonical);
      case ConstraintKind::kGbnf:
        return CompileGbnf(canonical);
      case ConstraintKind::kChoice: {
        const auto j = nlohmann::json::parse(canonical);
        return CompileChoice(j.get<std::vector<std::string>>());
      }
    }
    return InvalidArgumentError("unknown constraint kind");
  });
}

}  // namespace weft::sampling
