// What every byte-level constraint over tokens shares (JSON mode's
// JsonConstraint, structured outputs' GrammarConstraint): the mask of a set
// of tokens, the trie walk that finds the tokens a recognizer state accepts,
// and a small per-sequence cache of masks keyed by state.
//
// Thread safety: MaskCache is used by one thread at a time; the functions
// only read their arguments.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "util/check.h"

namespace weft::sampling {

// Token masks: bit t % 64 of word t / 64 is token t.
inline bool MaskHas(std::span<const uint64_t> mask, size_t t) {
  return (mask[t / 64] >> (t % 64)) & 1;
}
inline void MaskSet(std::vector<uint64_t>* mask, size_t t) {
  (*mask)[t / 64] |= uint64_t{1} << (t % 64);
}
inline void MaskClear(std::vector<uint64_t>* mask, size_t t) {
  (*mask)[t / 64] &= ~(uint64_t{1} << (t % 64));
}

// The mask of `tokens` over a vocabulary of vocab_size tokens. REQUIRES:
// every token in [0, vocab_size).
inline std::vector<uint64_t> TokenSetMask(int32_t vocab_size, std::span<const int32_t> tokens) {
  std::vector<uint64_t> mask((static_cast<size_t>(vocab_size) + 63) / 64, 0);
  for (int32_t t : tokens) {
    CHECK(t >= 0 && t < vocab_size) << "token " << t;
    MaskSet(&mask, static_cast<size_t>(t));
  }
  return mask;
}

// Calls visit(id, state) for each token of `sorted` (a VocabBytes::Sorted
// of `vocab`, json_constraint.h) whose every byte `advance(&state, byte)`
// accepts, starting from `start`; `state` is the one after its last byte.
// Pieces are visited in byte order: the state of a prefix shared with the
// previous piece is kept, and pieces sharing a rejected prefix are skipped
// without being read.
template <typename Vocab, typename State, typename Advance, typename Visit>
void VisitVocabTrie(const Vocab& vocab, const typename Vocab::Sorted& sorted, const State& start,
                    Advance advance, Visit visit) {
  // states[d]: the state after the first d bytes of the current piece;
  // states[0 .. valid] hold for it. A prefix of `bad` bytes of the last
  // piece was rejected (kNone: none was): pieces sharing it are too.
  constexpr size_t kNone = ~size_t{0};
  std::vector<State> states(vocab.max_piece_bytes() + 1);
  states[0] = start;
  size_t valid = 0, bad = kNone;
  for (size_t i = 0; i < sorted.order.size(); ++i) {
    if (bad != kNone && sorted.lcp[i] >= bad) continue;
    const int32_t id = sorted.order[i];
    const std::string_view piece = vocab.piece(id);
    valid = std::min<size_t>(valid, sorted.lcp[i]);
    bad = kNone;
    for (size_t d = valid; d < piece.size(); ++d) {
      states[d + 1] = states[d];
      if (!advance(&states[d + 1], static_cast<uint8_t>(piece[d]))) {
        bad = d + 1;
        break;
      }
      valid = d + 1;
    }
    if (bad == kNone) visit(id, states[piece.size()]);
  }
}

// The tokens that end generation under a constraint: which they are, and
// their mask (the whole mask once the constraint is complete or broken).
// Thread safety: immutable after construction.
class EndTokens {
 public:
  // REQUIRES: every token in [0, vocab_size).
  EndTokens(int32_t vocab_size, std::vector<int32_t> tokens) : tokens_(std::move(tokens)) {
    std::sort(tokens_.begin(), tokens_.end());
    mask_ = TokenSetMask(vocab_size, tokens_);
  }
  bool Has(int32_t token) const {
    return std::binary_search(tokens_.begin(), tokens_.end(), token);
  }
  std::span<const int32_t> tokens() const { return tokens_; }  // sorted
  const std::vector<uint64_t>& mask() const { return mask_; }

 private:
  std::vector<int32_t> tokens_;  // sorted
  std::vector<uint64_t> mask_;
};

// Sets in *bits the tokens of `sorted` that VisitVocabTrie visits.
template <typename Vocab, typename State, typename Advance>
void WalkVocabTrie(const Vocab& vocab, const typename Vocab::Sorted& sorted, const State& start,
                   Advance advance, std::vector<uint64_t>* bits) {
  VisitVocabTrie(vocab, sorted, start, advance,
                 [bits](int32_t id, const State&) { MaskSet(bits, static_cast<size_t>(id)); });
}

// Masks by recognizer state, least recently used evicted first.
// Invariant: at most kEntries entries.
template <typename State>
class MaskCache {
 public:
  static constexpr int kEntries = 8;

  // The mask of `state` (`hash` a hash of it, or any constant), computed by
  // compute(&bits) when not cached. Valid until the next call.
  template <typename Compute>
  std::span<const uint64_t> Get(const State& state, uint64_t hash, Compute compute) {
    ++uses_;
    for (Entry& e : entries_) {
      if (e.hash == hash && e.state == state) {
        e.last_use = uses_;
        return e.bits;
      }
    }
    Entry* slot;
    if (entries_.size() < kEntries) {
      slot = &entries_.emplace_back();
    } else {
      slot = &*std::min_element(entries_.begin(), entries_.end(),
                                [](const Entry& a, const Entry& b) {
                                  return a.last_use < b.last_use;
                                });
    }
    slot->state = state;
    slot->hash = hash;
    slot->last_use = uses_;
    compute(&slot->bits);
    return slot->bits;
  }

 private:
  struct Entry {
    State state;
    uint64_t hash = 0;
    uint64_t last_use = 0;
    std::vector<uint64_t> bits;
  };
  uint64_t uses_ = 0;
  std::vector<Entry> entries_;
};

}  // namespace weft::sampling
