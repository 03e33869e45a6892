#include "sampling/grammar_constraint.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "util/check.h"

namespace weft::sampling {

GrammarConstraint::GrammarConstraint(std::shared_ptr<const Grammar> grammar,
                                     std::shared_ptr<const VocabBytes> vocab,
                                     std::vector<int32_t> end_tokens)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)), end_tokens_(std::move(end_tokens)) {
  CHECK(grammar_ != nullptr);
  CHECK(vocab_ != nullptr);
  std::sort(end_tokens_.begin(), end_tokens_.end());
  end_mask_.assign((static_cast<size_t>(vocab_->size()) + 63) / 64, 0);
  for (int32_t t : end_tokens_) {
    CHECK(t >= 0 && t < vocab_->size()) << "end token " << t;
    MaskSet(&end_mask_, t);
  }
  state_ = grammar_->Start();
}

bool GrammarConstraint::IsEnd(int32_t token) const {
  return std::binary_search(end_tokens_.begin(), end_tokens_.end(), token);
}

bool GrammarConstraint::Allows(int32_t token) const {
  if (IsEnd(token)) return broken_ || grammar_->Complete(state_);
  if (broken_) return false;
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty()) return false;
  GrammarState s = state_;
  return grammar_->Advance(&s, piece);
}

void GrammarConstraint::Accept(int32_t token) {
  if (broken_ || IsEnd(token)) return;
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty() || !grammar_->Advance(&state_, piece)) broken_ = true;
}

std::span<const uint64_t> GrammarConstraint::AllowedMask() {
  if (finished()) return end_mask_;
  ++uses_;
  const uint64_t hash = state_.Hash();
  for (CachedMask& c : cache_) {
    if (c.hash == hash && c.state == state_) {
      c.last_use = uses_;
      return c.bits;
    }
  }
  CachedMask* slot;
  if (cache_.size() < kMaskCacheEntries) {
    slot = &cache_.emplace_back();
  } else {
    slot = &*std::min_element(cache_.begin(), cache_.end(),
                              [](const CachedMask& a, const CachedMask& b) {
                                return a.last_use < b.last_use;
                              });
  }
  slot->state = state_;
  slot->hash = hash;
  slot->last_use = uses_;
  ComputeMask(&slot->bits);
  return slot->bits;
}

void GrammarConstraint::ComputeMask(std::vector<uint64_t>* bits) const {
  bits->assign(end_mask_.size(), 0);
  const VocabBytes::Sorted& sorted = vocab_->all();
  // states[d]: the state after the first d bytes of the current piece;
  // states[0 .. valid] hold for it. A prefix of `bad` bytes of the last
  // piece was rejected (kNone: none was): pieces sharing it are too.
  constexpr size_t kNone = ~size_t{0};
  std::vector<GrammarState> states(vocab_->max_piece_bytes() + 1);
  states[0] = state_;
  size_t valid = 0, bad = kNone;
  for (size_t i = 0; i < sorted.order.size(); ++i) {
    if (bad != kNone && sorted.lcp[i] >= bad) continue;
    const int32_t id = sorted.order[i];
    const std::string_view piece = vocab_->piece(id);
    valid = std::min<size_t>(valid, sorted.lcp[i]);
    bad = kNone;
    for (size_t d = valid; d < piece.size(); ++d) {
      states[d + 1] = states[d];
      if (!grammar_->Advance(&states[d + 1], static_cast<uint8_t>(piece[d]))) {
        bad = d + 1;
        break;
      }
      valid = d + 1;
    }
    if (bad == kNone) MaskSet(bits, id);
  }
  // End tokens: only once the output is a whole sentence, even if text.
  for (int32_t t : end_tokens_) {
    if (grammar_->Complete(state_)) {
      MaskSet(bits, t);
    } else {
      MaskClear(bits, t);
    }
  }
}

}  // namespace weft::sampling
