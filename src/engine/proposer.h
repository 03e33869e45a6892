// Proposers for speculative decoding: guess the tokens that follow a
// sequence, for the target model to verify in its next pass (the scheduler
// appends them to the sequence's decode token; see Scheduler). A wrong guess
// costs only the pass time of its position; the verified output is the one
// the model would have produced without speculation. Every proposer here
// gives one guess per position (a point mass), so the executor's one
// verification rule (greedy: exact match; sampling: rejection sampling of a
// one-hot draft) serves them all.
//
// The scheduler asks once per pass, for every sequence that may speculate
// (ProposeBatch), so that a model-backed proposer runs one batched decode
// over all of them; it calls Release when a request leaves running (finish,
// abort, preemption) so the proposer can drop what it keeps per request.
// A costly proposer reports what its last call's forwards took
// (last_timing): the scheduler prices a guess from its guess forwards
// alone, not from the catch-up over tokens it had not seen.
//
// NgramProposer (prompt lookup, vLLM's "ngram" method, llama.cpp's lookup
// decoding): finds the sequence's last n tokens earlier in its own prompt
// and output, n from max_n down to min_n (longest first; among the matches
// of one n the most recent), and proposes the up to k tokens that followed
// that match. Needs no model. The draft-model proposer lives in runtime/
// (runtime/draft_proposer.h): it needs a model and its own KV.
//
// Thread safety: a Proposer is called by its scheduler only, which holds
// the engine's lock around every call (ProposeBatch on the loop thread,
// Release on whichever thread finishes a request). NgramProposer's Propose
// is const and keeps no state; any thread.
#pragma once

#include <span>
#include <vector>

#include "engine/request.h"

namespace weft::engine {

// One sequence to guess for.
struct ProposeRequest {
  RequestId id = 0;
  // Prompt then output; valid during the call only.
  std::span<const TokenId> tokens;
  int max_k = 0;  // guesses wanted at most (>= 1)
};

// What a costly proposer's last ProposeBatch spent in its forwards. A
// guess forward feeds each of its sequences one token, the last one the
// sequence has (the target's latest token or the guess before), and yields
// one guess each: what one more guess position costs. A catch-up forward
// feeds tokens the proposer has not seen yet besides (on a sequence's first
// call, its whole prompt): a cost of that call, not of a guess.
struct ProposeTiming {
  double catchup_ms = 0;  // in catch-up forwards
  double guess_ms = 0;    // in guess forwards
  int guess_steps = 0;    // guess forwards run
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Resizes *out to reqs.size() and replaces (*out)[i] with at most
  // reqs[i].max_k tokens guessed to follow reqs[i].tokens; empty when there
  // is no guess (never an error: a sequence without guesses decodes as
  // without speculation).
  virtual void ProposeBatch(std::span<const ProposeRequest> reqs,
                            std::vector<std::vector<TokenId>>* out) = 0;
  // Forgets request `id` (its state, its KV); no-op when unknown.
  virtual void Release(RequestId id) { (void)id; }
  // True when a proposal costs next to nothing (no model): the scheduler
  // asks for as many guesses as each sequence could take and trims them to
  // the pass afterwards. False (a model runs per guess): it asks for
  // exactly the guesses the pass will verify if every proposal is full.
  virtual bool cheap() const { return false; }
  // The forwards of the last ProposeBatch (all zero when it ran none, and
  // for a proposer without a model).
  virtual ProposeTiming last_timing() const { return {}; }
};

class NgramProposer final : public Proposer {
 public:
  // REQUIRES: 1 <= min_n <= max_n.
  NgramProposer(int min_n, int max_n);
  // Replaces *out with at most max_k tokens guessed to follow `tokens`.
  void Propose(std::span<const TokenId> tokens, int max_k,
               std::vector<TokenId>* out) const;
  void ProposeBatch(std::span<const ProposeRequest> reqs,
                    std::vector<std::vector<TokenId>>* out) override;
  bool cheap() const override { return true; }

 private:
  int min_n_;
  int max_n_;
};

}  // namespace weft::engine
