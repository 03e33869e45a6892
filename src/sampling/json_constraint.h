// JSON mode for one sequence: which tokens may come next so that the output
// stays a prefix of one JSON object (json_grammar.h), and, once the object
// is closed, only an end token.
//
//   auto vocab = std::make_shared<const VocabBytes>(pieces);  // per model
//   JsonConstraint c(vocab, end_tokens);                      // per sequence
//   loop: c.AllowedMask() or c.Allows(t); ... c.Accept(t);
//
// A mask walks the vocabulary in byte order as a trie: tokens that share a
// rejected prefix are skipped without being read, and the JSON state of a
// shared prefix is computed once. Inside a string, the tokens of plain
// string text (most of a vocabulary) are allowed as a set and only the rest
// are walked. Masks are cached by JSON state (a sequence inside a string
// asks for the same state token after token), up to MaskCache::kEntries per
// sequence (token_mask.h).
//
// Thread safety: VocabBytes is immutable after construction (share it
// across threads); a JsonConstraint is used by one thread at a time.
// Invariants: state_ is a prefix state JsonAdvance accepted, unless
// broken_ (a token the mask did not allow was accepted), after which only
// end tokens are allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sampling/json_grammar.h"
#include "sampling/token_mask.h"

namespace weft::sampling {

// The bytes each token of a vocabulary stands for, sorted for trie walks.
class VocabBytes {
 public:
  // pieces[id]: the bytes token id decodes to; empty for tokens that are
  // never text (control tokens), which JSON mode never allows.
  explicit VocabBytes(std::vector<std::string> pieces);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  std::string_view piece(int32_t id) const { return pieces_[id]; }
  // The tokens in byte order of their pieces, and lcp[i]: the bytes
  // order[i]'s piece shares with order[i - 1]'s (0 for i = 0).
  struct Sorted {
    std::vector<int32_t> order;
    std::vector<uint32_t> lcp;
  };
  // Every token with a non-empty piece.
  const Sorted& all() const { return all_; }
  // Those that are not plain string text (JsonInPlainString).
  const Sorted& not_plain() const { return not_plain_; }
  // Mask of the plain string-text tokens.
  const std::vector<uint64_t>& plain() const { return plain_; }
  size_t max_piece_bytes() const { return max_len_; }
  // `ids` (tokens with non-empty pieces) in byte order.
  Sorted SortedOf(std::vector<int32_t> ids) const;

 private:
  std::vector<std::string> pieces_;
  Sorted all_, not_plain_;
  std::vector<uint64_t> plain_;
  size_t max_len_ = 0;
};

class JsonConstraint {
 public:
  // end_tokens: the tokens that end generation (allowed only, and always,
  // once the object is closed). REQUIRES: vocab != nullptr; end tokens in
  // [0, vocab->size()).
  JsonConstraint(std::shared_ptr<const VocabBytes> vocab,
                 std::vector<int32_t> end_tokens);

  // Whether token may come next. REQUIRES: token in [0, vocab size).
  bool Allows(int32_t token) const;
  // Mask of the tokens that may come next (MaskHas). Valid until
  // the next call on this object. All zero only if no token of the
  // vocabulary can continue (one without the single bytes JSON needs).
  std::span<const uint64_t> AllowedMask();
  // Records the token that came. A token Allows() refused breaks the
  // constraint: from then on only end tokens are allowed.
  void Accept(int32_t token);

  bool complete() const { return JsonComplete(state_); }

 private:
  void ComputeMask(std::vector<uint64_t>* bits) const;

  std::shared_ptr<const VocabBytes> vocab_;
  EndTokens end_;
  JsonState state_;
  bool broken_ = false;
  MaskCache<JsonState> cache_;
};

}  // namespace weft::sampling
