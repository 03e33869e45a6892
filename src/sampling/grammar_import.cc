// GrammarBuilder::Import: a built Grammar's rules back into a builder, so
// that compiled grammars (a JSON Schema, a regex) compose with literals and
// each other (tool_call_grammar.h).
#include "sampling/grammar.h"

namespace weft::sampling {

int GrammarBuilder::Import(const Grammar& g) {
  const int base = static_cast<int>(names_.size());
  for (const std::string& name : g.names_) NewRule(name);
  std::vector<GrammarElement> sets;
  sets.reserve(g.sets_.size());
  for (const ByteSet& set : g.sets_) sets.push_back(Bytes(set));
  for (size_t r = 0; r < g.alts_.size(); ++r) {
    GrammarAlts alts;
    for (uint32_t start : g.alts_[r]) {
      GrammarSeq seq;
      for (uint32_t p = start; g.elems_[p].kind != GrammarElement::kEnd; ++p) {
        const GrammarElement& e = g.elems_[p];
        if (e.kind == GrammarElement::kRule) {
          seq.push_back(Ref(base + static_cast<int>(e.arg)));
        } else {
          seq.push_back(sets[e.arg]);
        }
      }
      alts.push_back(std::move(seq));
    }
    Define(base + static_cast<int>(r), std::move(alts));
  }
  // Position 0 of a built grammar is the reference to its root.
  return base + static_cast<int>(g.elems_[0].arg);
}

}  // namespace weft::sampling
