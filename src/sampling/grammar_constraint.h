// A structured-output constraint for one sequence: which tokens may come
// next so that the output stays a prefix of a sentence of a Grammar
// (grammar.h), and end tokens only when the output is a whole sentence.
// The same shape as JsonConstraint (json_constraint.h), whose VocabBytes
// and mask helpers it uses.
//
//   auto g = CompileConstraint(ConstraintKind::kJsonSchema, schema_text);  // grammar_cache.h
//   GrammarConstraint c(*g, vocab, end_tokens);                           // per sequence
//   loop: c.Allows(argmax) first, else c.AllowedMask(); ... c.Accept(t);
//
// A mask comes from the grammar's GrammarMaskIndex (mask_index.h: masks
// kept per stack top, shared by the sequences of a grammar, and only the
// tokens that pop past the top walked from the whole state), or, for a
// state the index cannot bound, from a walk of the whole vocabulary in
// byte order as a trie (tokens sharing a rejected prefix are skipped; a
// shared prefix's state is computed once); both give the same mask.
// Masks are cached by grammar state, up to MaskCache::kEntries per sequence (token_mask.h).
//
// Thread safety: the Grammar and VocabBytes are immutable and shared; a
// GrammarConstraint is used by one thread at a time.
// Invariants: state_ is a state the grammar reached by accepting every
// token so far, unless broken_ (a token the mask did not allow was
// accepted), after which only end tokens are allowed.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "sampling/grammar.h"
#include "sampling/json_constraint.h"
#include "sampling/mask_index.h"

namespace weft::sampling {

class GrammarConstraint {
 public:
  // REQUIRES: grammar, vocab != nullptr; end tokens in [0, vocab->size()).
  GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                    std::shared_ptr<const VocabBytes> vocab, std::vector<int32_t> end_tokens);

  // Whether token may come next. REQUIRES: token in [0, vocab size).
  bool Allows(int32_t token) const;
  // Mask of the tokens that may come next (MaskHas); valid until the next
  // call on this object. All zero only if no token can continue (a cap of
  // grammar.h was reached, or the vocabulary lacks the bytes needed).
  std::span<const uint64_t> AllowedMask();
  // Records the token that came; one Allows() refused breaks the
  // constraint (only end tokens from then on).
  void Accept(int32_t token);

  // Whether the output so far is a whole sentence (end tokens allowed).
  bool complete() const { return !broken_ && grammar_->Complete(state_); }
  // Whether nothing but an end token may come.
  bool finished() const { return broken_ || !grammar_->CanContinue(state_); }
  const GrammarState& state() const { return state_; }
  // AllowedMask() by a walk of the whole vocabulary, without the index
  // (tests and benchmarks compare the two).
  std::vector<uint64_t> ReferenceMask() const;

 private:
  void ComputeMask(std::vector<uint64_t>* bits, bool use_index) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const VocabBytes> vocab_;
  EndTokens end_;
  GrammarState state_;
  bool broken_ = false;
  std::shared_ptr<GrammarMaskIndex> index_;  // shared per (grammar, vocab)
  MaskCache<GrammarState> cache_;
};

}  // namespace weft::sampling
