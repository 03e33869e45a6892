#include "sampling/grammar_constraint.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "util/check.h"

namespace weft::sampling {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const VocabBytes> vocab,
                                     std::vector<int32_t> end_tokens)
    : grammar_(std::move(grammar)),
      vocab_((CHECK(vocab != nullptr), std::move(vocab))),
      end_(vocab_->size(), std::move(end_tokens)) {
  CHECK(grammar_ != nullptr);
  state_ = grammar_->Start();
  index_ = GrammarMaskIndex::For(grammar_, vocab_);
}

bool GrammarConstraint::Allows(int32_t token) const {
  if (end_.Has(token)) return broken_ || grammar_->Complete(state_);
  if (broken_) return false;
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty()) return false;
  GrammarState s = state_;
  return grammar_->Advance(&s, piece);
}

void GrammarConstraint::Accept(int32_t token) {
  if (broken_ || end_.Has(token)) return;
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty() || !grammar_->Advance(&state_, piece)) broken_ = true;
}

std::span<const uint64_t> GrammarConstraint::AllowedMask() {
  if (finished()) return end_.mask();
  return cache_.Get(state_, state_.Hash(),
                    [this](std::vector<uint64_t>* bits) { ComputeMask(bits, true); });
}

std::vector<uint64_t> GrammarConstraint::ReferenceMask() const {
  if (finished()) return end_.mask();
  std::vector<uint64_t> bits;
  ComputeMask(&bits, /*use_index=*/false);
  return bits;
}

void GrammarConstraint::ComputeMask(std::vector<uint64_t>* bits, bool use_index) const {
  if (!use_index || !index_->Mask(state_, bits)) {
    bits->assign(end_.mask().size(), 0);
    WalkVocabTrie(*vocab_, vocab_->all(), state_,
                  [this](GrammarState* st, uint8_t byte) { return grammar_->Advance(st, byte); },
                  bits);
  }
  // End tokens: only once the output is a whole sentence, even if text.
  for (int32_t t : end_.tokens()) {
    if (grammar_->Complete(state_)) {
      MaskSet(bits, t);
    } else {
      MaskClear(bits, t);
    }
  }
}

}  // namespace weft::sampling
