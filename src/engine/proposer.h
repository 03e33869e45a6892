// Proposers for speculative decoding: guess the tokens that follow a
// sequence, for the target model to verify in its next pass (the scheduler
// appends them to the sequence's decode token; see Scheduler). A wrong guess
// costs only the pass time of its position; the verified output is the one
// the model would have produced without speculation.
//
// NgramProposer (prompt lookup, vLLM's "ngram" method, llama.cpp's lookup
// decoding): finds the sequence's last n tokens earlier in its own prompt
// and output, n from max_n down to min_n (longest first; among the matches
// of one n the most recent), and proposes the up to k tokens that followed
// that match. Needs no model.
//
// Thread safety: Propose is const and keeps no state; any thread.
#pragma once

#include <span>
#include <vector>

#include "engine/request.h"

namespace weft::engine {

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Replaces *out with at most max_k tokens guessed to follow `tokens`
  // (prompt then output); empty when there is no guess.
  virtual void Propose(std::span<const TokenId> tokens, int max_k,
                       std::vector<TokenId>* out) const = 0;
};

class NgramProposer final : public Proposer {
 public:
  // REQUIRES: 1 <= min_n <= max_n.
  NgramProposer(int min_n, int max_n);
  void Propose(std::span<const TokenId> tokens, int max_k,
               std::vector<TokenId>* out) const override;

 private:
  int min_n_;
  int max_n_;
};

}  // namespace weft::engine
