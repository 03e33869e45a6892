#include "sampling/history.h"

namespace weft::sampling {

TokenHistory::TokenHistory(bool track_repetition, int32_t window)
    : track_repetition_(track_repetition), window_(window > 0 ? window : 0) {}

void TokenHistory::AddPrompt(int32_t token) { AddRepetition(token); }

void TokenHistory::AddOutput(int32_t token) {
  AddRepetition(token);
  ++output_counts_[token];
  ++num_output_;
}

void TokenHistory::AddRepetition(int32_t token) {
  if (!track_repetition_) return;
  ++repetition_counts_[token];
  if (window_ == 0) return;
  recent_.push_back(token);
  if (static_cast<int32_t>(recent_.size()) > window_) {
    const int32_t old = recent_.front();
    recent_.pop_front();
    auto it = repetition_counts_.find(old);
    if (--it->second == 0) repetition_counts_.erase(it);
  }
}

}  // namespace weft::sampling
