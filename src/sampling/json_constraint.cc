#include "sampling/json_constraint.h"

#include <algorithm>
#include <utility>

#include "util/check.h"

namespace weft::sampling {

VocabBytes::VocabBytes(std::vector<std::string> pieces)
    : pieces_(std::move(pieces)) {
  plain_.assign((pieces_.size() + 63) / 64, 0);
  // A string's inside: plain text leaves this state as it is.
  JsonState in_string;
  CHECK(JsonAdvance(&in_string, "{\""));
  std::vector<int32_t> ids, not_plain;
  for (int32_t id = 0; id < size(); ++id) {
    const std::string& p = pieces_[id];
    max_len_ = std::max(max_len_, p.size());
    if (p.empty()) continue;
    ids.push_back(id);
    // No quote or backslash: the bytes never leave the string (a piece like
    // `":"","` returns to an equal state by another way).
    JsonState s = in_string;
    if (p.find_first_of("\"\\") == std::string::npos && JsonAdvance(&s, p) &&
        s == in_string) {
      MaskSet(&plain_, id);
    } else {
      not_plain.push_back(id);
    }
  }
  all_ = SortedOf(std::move(ids));
  not_plain_ = SortedOf(std::move(not_plain));
}

VocabBytes::Sorted VocabBytes::SortedOf(std::vector<int32_t> ids) const {
  Sorted out;
  out.order = std::move(ids);
  // Byte order (std::string compares as unsigned char); equal pieces by id.
  std::sort(out.order.begin(), out.order.end(), [&](int32_t a, int32_t b) {
    const int c = pieces_[a].compare(pieces_[b]);
    return c != 0 ? c < 0 : a < b;
  });
  out.lcp.assign(out.order.size(), 0);
  for (size_t i = 1; i < out.order.size(); ++i) {
    const std::string& a = pieces_[out.order[i - 1]];
    const std::string& b = pieces_[out.order[i]];
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    out.lcp[i] = static_cast<uint32_t>(n);
  }
  return out;
}

JsonConstraint::JsonConstraint(std::shared_ptr<const VocabBytes> vocab,
                               std::vector<int32_t> end_tokens)
    : vocab_((CHECK(vocab != nullptr), std::move(vocab))),
      end_(vocab_->size(), std::move(end_tokens)) {}

bool JsonConstraint::Allows(int32_t token) const {
  if (broken_ || complete()) return end_.Has(token);
  if (end_.Has(token)) return false;
  const std::string_view piece = vocab_->piece(token);
  if (piece.empty()) return false;
  JsonState s = state_;
  return JsonAdvance(&s, piece);
}

void JsonConstraint::Accept(int32_t token) {
  if (broken_ || end_.Has(token)) return;
  const std::string_view piece = vocab_->piece(token);
  if (complete() || piece.empty() || !JsonAdvance(&state_, piece)) {
    broken_ = true;
  }
}

std::span<const uint64_t> JsonConstraint::AllowedMask() {
  if (broken_ || complete()) return end_.mask();
  // JsonState compares bytewise: the hash is not needed.
  return cache_.Get(state_, 0, [this](std::vector<uint64_t>* bits) { ComputeMask(bits); });
}

void JsonConstraint::ComputeMask(std::vector<uint64_t>* bits) const {
  auto advance = [](JsonState* st, uint8_t byte) { return JsonAdvanceByte(st, byte); };
  if (JsonInPlainString(state_)) {
    *bits = vocab_->plain();  // they leave state_ as it is: all allowed
    WalkVocabTrie(*vocab_, vocab_->not_plain(), state_, advance, bits);
  } else {
    bits->assign(end_.mask().size(), 0);
    WalkVocabTrie(*vocab_, vocab_->all(), state_, advance, bits);
  }
  // The object is open: no end token yet, even one that is also text.
  for (int32_t t : end_.tokens()) MaskClear(bits, t);
}

}  // namespace weft::sampling
