// The individual steps of token selection, as free functions so each can be
// tested on hand-made logits. The Sampler (sampler.h) chains them.
//
// Two representations:
//   - dense logits: std::span<float> indexed by token id (vocab-sized);
//     logit bias and penalties edit them in place, touching only the tokens
//     they name (sparse).
//   - candidates: (softmax weight, token id) pairs, weight =
//     exp((logit - max) / temperature) in (0, 1], that min-p, top-k and
//     top-p shrink. Candidates are ALWAYS in increasing token id order: the
//     truncations find a cutoff with a log-scale histogram of the weights
//     (O(V)) plus a sort of the one bucket that straddles it, then filter
//     stably. No full sort of the vocabulary, and the order a draw walks
//     never depends on the standard library's sort.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

namespace weft::sampling {

struct Candidate {
  float weight = 0.0f;  // unnormalised probability, > 0
  int32_t id = 0;       // token id
};

// The ranking order: larger weight first, equal weights by lower id.
inline bool CandidateBefore(const Candidate& a, const Candidate& b) {
  return a.weight > b.weight || (a.weight == b.weight && a.id < b.id);
}

// logits[t] += bias for each entry; a bias of exactly kBanBias (-100) sets
// the logit to -inf instead. REQUIRES: every token id < logits.size().
void ApplyLogitBias(const std::map<int32_t, float>& logit_bias,
                    std::span<float> logits);

// HF/llama.cpp repetition penalty for every token in `counts`: a positive
// logit is divided by `penalty`, a negative one multiplied by it.
void ApplyRepetitionPenalty(
    float penalty, const std::unordered_map<int32_t, int32_t>& counts,
    std::span<float> logits);

// OpenAI penalties for every generated token t seen count[t] > 0 times:
// logits[t] -= count[t] * frequency + presence.
void ApplyPresenceFrequencyPenalty(
    float presence, float frequency,
    const std::unordered_map<int32_t, int32_t>& output_counts,
    std::span<float> logits);

// Index of the largest logit, ties to the lowest id; NaN is skipped. -1 when
// there is no element above -inf (empty, all -inf or NaN).
int32_t Argmax(std::span<const float> logits);

// The n largest logits as (id, logit), sorted by logit descending with ties
// to lower ids; NaN skipped (fewer than n if the span is shorter). One pass
// with a sorted array of n, so meant for small n (logprobs, small top-k).
struct TokenLogit {
  int32_t id = 0;        // token id
  float logit = 0.0f;    // its logit
};
std::vector<TokenLogit> TopLogits(std::span<const float> logits, int32_t n);

// The largest top-k count for which the Sampler uses BuildTopKCandidates.
inline constexpr int32_t kSmallTopK = 128;

// Same result as BuildCandidates followed by ApplyTopK(k) (ranking by logit
// rather than weight, which differs only if distinct logits round to one
// weight at the cut), in one cheap pass without exp over the vocabulary.
// REQUIRES: temperature > 0, k > 0.
void BuildTopKCandidates(std::span<const float> logits, float temperature,
                         int32_t k, std::vector<Candidate>* out);

// Fills *out, in increasing token id, with weight
// ExpApprox((logits[t] - max) / temperature) for every token whose weight is
// > 0 (NaN, -inf and underflowing tokens are left out; the argmax always
// stays, with weight 1). If some logits are +inf, only they stay (weight 1).
// REQUIRES: temperature > 0.
void BuildCandidates(std::span<const float> logits, float temperature,
                     std::vector<Candidate>* out);

// Drops candidates with weight < min_p * (largest weight). min_p <= 0: no-op.
void ApplyMinP(float min_p, std::vector<Candidate>* cands);

// Keeps the k candidates first in CandidateBefore order. k <= 0 or
// k >= size: no-op.
void ApplyTopK(int32_t k, std::vector<Candidate>* cands);

// Keeps the shortest CandidateBefore-prefix whose weights sum to >= top_p of
// the total (always at least one): a candidate stays iff the mass ranked
// strictly before it is < top_p * total. top_p >= 1: no-op.
void ApplyTopP(float top_p, std::vector<Candidate>* cands);

// Inverse-CDF draw over `cands` in their order (increasing id): the first
// candidate whose cumulative weight exceeds u * total. u in [0, 1).
// -1 when cands is empty.
int32_t SampleCandidates(std::span<const Candidate> cands, double u);

}  // namespace weft::sampling
