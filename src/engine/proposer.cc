#include "engine/proposer.h"

#include <algorithm>

#include "util/check.h"

namespace weft::engine {

NgramProposer::NgramProposer(int min_n, int max_n)
    : min_n_(min_n), max_n_(max_n) {
  CHECK_GE(min_n, 1);
  CHECK_LE(min_n, max_n);
}

void NgramProposer::Propose(std::span<const TokenId> tokens, int max_k,
                            std::vector<TokenId>* out) const {
  out->clear();
  const int len = static_cast<int>(tokens.size());
  if (max_k <= 0) return;
  for (int n = std::min(max_n_, len - 1); n >= min_n_; --n) {
    const std::span<const TokenId> suffix = tokens.subspan(size_t(len - n));
    // The most recent earlier occurrence: start i, i + n <= len - 1 (at
    // least one token follows it).
    for (int i = len - n - 1; i >= 0; --i) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + i)) {
        continue;
      }
      const int from = i + n;
      const int k = std::min(max_k, len - from);
      out->assign(tokens.begin() + from, tokens.begin() + from + k);
      return;
    }
  }
}

void NgramProposer::ProposeBatch(std::span<const ProposeRequest> reqs,
                                 std::vector<std::vector<TokenId>>* out) {
  out->resize(reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    Propose(reqs[i].tokens, reqs[i].max_k, &(*out)[i]);
  }
}

}  // namespace weft::engine
