// Token masks of grammar states from masks kept per stack top, as
// xgrammar's adaptive token-mask cache does for its automaton's states.
//
//   auto index = GrammarMaskIndex::For(grammar, vocab);   // shared
//   if (!index->Mask(state, &bits)) { ... walk the whole vocabulary ... }
//
// A state (grammar.h) accepts a token if one of its stacks does. What a
// stack accepts depends mostly on its top few positions: the index keeps,
// per key (a stack's last kKeyDepth positions, or the whole stack when it
// is no deeper), the vocabulary walked from the key alone, split into
//   accepted:  runs that never pop the key (nor end popping it): accepted
//              whatever lies below the key;
//   uncertain: runs that pop the key (what lies below decides): walked again
//              from the whole state, per mask, as the full walk does;
//   the rest:  rejected whatever lies below the key.
// The caps of grammar.h depend on the whole state: an entry records the
// most stacks one byte made and the deepest stack met by its walk, and a
// state whose sum of those could reach a cap gets `false` (the caller walks
// the whole vocabulary), so a mask is always exactly the full walk's.
// Entries are built on first use (one vocabulary walk each, as one full
// mask costs) and shared by every sequence with that grammar and vocabulary.
//
// Thread safety: thread-safe; a mutex guards the entry table, and an entry
// is built outside it and immutable once published.
// Invariants: at most kMaxEntries entries (an entry holds a vocabulary
// mask, 6 KiB for 49152 tokens, and its uncertain tokens); an entry
// describes its key's walk over vocab->all() exactly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/json_constraint.h"

namespace weft::sampling {

class GrammarMaskIndex {
 public:
  // Positions of a stack's top that key an entry.
  static constexpr size_t kKeyDepth = 3;
  // Entries per index, at most; a state needing another gets `false`.
  static constexpr size_t kMaxEntries = 2048;

  // REQUIRES: grammar, vocab != nullptr.
  GrammarMaskIndex(std::shared_ptr<const Grammar> grammar,
                   std::shared_ptr<const VocabBytes> vocab);

  // The process-wide index of (grammar, vocab): a small LRU of them.
  static std::shared_ptr<GrammarMaskIndex> For(const std::shared_ptr<const Grammar>& grammar,
                                               const std::shared_ptr<const VocabBytes>& vocab);

  // Sets *bits to exactly the tokens WalkVocabTrie(vocab, vocab->all(),
  // state, Grammar::Advance) sets (end tokens get no special treatment);
  // false, and *bits unspecified, when the state needs that walk.
  bool Mask(const GrammarState& state, std::vector<uint64_t>* bits);

  // What the index did so far (benchmarks and tests report it).
  struct Stats {
    uint64_t masks = 0;      // Mask calls that returned true
    uint64_t fallbacks = 0;  // ... and false
    uint64_t built = 0;      // entries built
  };
  Stats stats() const;
  size_t num_entries() const;

 private:
  struct Entry {
    std::vector<uint64_t> accepted;  // mask
    VocabBytes::Sorted uncertain;
    size_t max_stacks = 0;  // AdvanceStats of the walk
    size_t max_depth = 0;
    bool capped = false;
  };
  using Key = std::vector<uint32_t>;  // {whole stack ? 1 : 0, positions...}
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };

  bool TryMask(const GrammarState& state, std::vector<uint64_t>* bits);
  // The entry of `key`, built if new; null if the table is full.
  std::shared_ptr<const Entry> Get(const Key& key);
  std::shared_ptr<const Entry> Build(const Key& key) const;

  const std::shared_ptr<const Grammar> grammar_;
  const std::shared_ptr<const VocabBytes> vocab_;
  mutable std::mutex mu_;
  std::unordered_map<Key, std::shared_ptr<const Entry>, KeyHash> entries_;  // guarded by mu_
  Stats stats_;  // guarded by mu_
};

}  // namespace weft::sampling
