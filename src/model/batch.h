// Batch: the tokens one forward pass runs. Laid out per token so that it can
// later carry tokens of several sequences (continuous batching); today the
// forward pass accepts one sequence per batch.
//
// Thread safety: a value.
// Invariant: all four vectors have the same length.
#pragma once

#include <cstdint>
#include <vector>

namespace weft::model {

struct Batch {
  std::vector<int32_t> tokens;     // token ids
  std::vector<int32_t> positions;  // position of each token in its sequence
  std::vector<int32_t> seq_ids;    // sequence (KV storage slot) of each token
  std::vector<uint8_t> logits;     // 1: return logits for this token

  void Add(int32_t token, int32_t pos, int32_t seq, bool want_logits) {
    tokens.push_back(token);
    positions.push_back(pos);
    seq_ids.push_back(seq);
    logits.push_back(want_logits ? 1 : 0);
  }
  void Clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    logits.clear();
  }
  size_t size() const { return tokens.size(); }
  bool empty() const { return tokens.empty(); }
  // Tokens whose logits are wanted.
  int64_t num_outputs() const {
    int64_t n = 0;
    for (uint8_t l : logits) n += l != 0;
    return n;
  }

  // A batch of `ids` at positions start, start+1, ... of `seq`, with logits
  // for the last token only (a prompt prefill).
  static Batch ForPrompt(const std::vector<int32_t>& ids, int32_t start = 0,
                         int32_t seq = 0, bool all_logits = false) {
    Batch b;
    for (size_t i = 0; i < ids.size(); ++i) {
      b.Add(ids[i], start + static_cast<int32_t>(i), seq,
            all_logits || i + 1 == ids.size());
    }
    return b;
  }
};

}  // namespace weft::model
