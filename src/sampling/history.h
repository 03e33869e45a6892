// TokenHistory: what the penalties need to know about a sequence's tokens.
//   - repetition_counts(): token -> occurrences among the prompt and
//     generated tokens (only the last `window` of them when window > 0);
//     tracked only when the repetition penalty is on.
//   - output_counts(): token -> occurrences among generated tokens (for the
//     presence and frequency penalties).
// Sparse (hash maps), so a sequence costs memory in proportion to its
// distinct tokens, not to the vocabulary.
//
// Thread safety: none; owned by one Sampler.
// Invariants: every count is > 0; with window > 0, repetition_counts() sums
// to recent_.size() <= window.
#pragma once

#include <cstdint>
#include <deque>
#include <unordered_map>

namespace weft::sampling {

class TokenHistory {
 public:
  // track_repetition = false skips the prompt+output bookkeeping entirely.
  TokenHistory(bool track_repetition, int32_t window);

  void AddPrompt(int32_t token);
  void AddOutput(int32_t token);

  const std::unordered_map<int32_t, int32_t>& repetition_counts() const {
    return repetition_counts_;
  }
  const std::unordered_map<int32_t, int32_t>& output_counts() const {
    return output_counts_;
  }
  int64_t num_output() const { return num_output_; }

 private:
  void AddRepetition(int32_t token);

  bool track_repetition_;
  int32_t window_;
  std::deque<int32_t> recent_;  // the last window_ tokens, when window_ > 0
  std::unordered_map<int32_t, int32_t> repetition_counts_;
  std::unordered_map<int32_t, int32_t> output_counts_;
  int64_t num_output_ = 0;
};

}  // namespace weft::sampling
