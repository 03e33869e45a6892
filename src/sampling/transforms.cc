#include "sampling/transforms.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "sampling/fast_exp.h"
#include "sampling/params.h"
#include "util/check.h"

namespace weft::sampling {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Histogram of weights on a log scale: 32 bins per power of two below the
// largest weight. Positive floats order like their bit patterns, so the bin
// is a shift of the bit distance to the largest weight; bins are monotone
// (a larger weight never lands in a later bin).
constexpr int kBinShift = 18;  // 23 mantissa bits - 5 => 32 bins per octave
constexpr uint32_t kNumBins = 4096;

uint32_t Bits(float f) { return std::bit_cast<uint32_t>(f); }

uint32_t Bin(float weight, uint32_t top_bits) {
  const uint32_t d = (top_bits - Bits(weight)) >> kBinShift;
  return d < kNumBins ? d : kNumBins - 1;
}

float MaxWeight(std::span<const Candidate> cands) {
  float m = 0.0f;
  for (const Candidate& c : cands) m = std::max(m, c.weight);
  return m;
}

// The candidates of bin `bin`, in CandidateBefore order (a strict total
// order, so the result does not depend on the sort implementation).
std::vector<Candidate> SortedBin(std::span<const Candidate> cands,
                                 uint32_t bin, uint32_t top_bits) {
  std::vector<Candidate> out;
  for (const Candidate& c : cands) {
    if (Bin(c.weight, top_bits) == bin) out.push_back(c);
  }
  std::sort(out.begin(), out.end(), CandidateBefore);
  return out;
}

// Keeps, in place and in order, the candidates ranked at or before cutoff.
void KeepThrough(const Candidate& cutoff, std::vector<Candidate>* cands) {
  std::erase_if(*cands, [&](const Candidate& c) {
    return CandidateBefore(cutoff, c);
  });
}

}  // namespace

void ApplyLogitBias(const std::map<int32_t, float>& logit_bias,
                    std::span<float> logits) {
  for (const auto& [token, bias] : logit_bias) {
    CHECK(token >= 0 && static_cast<size_t>(token) < logits.size()) << token;
    if (bias == kBanBias) {
      logits[token] = kNegInf;
    } else {
      logits[token] += bias;
    }
  }
}

void ApplyRepetitionPenalty(
    float penalty, const std::unordered_map<int32_t, int32_t>& counts,
    std::span<float> logits) {
  if (penalty == 1.0f) return;
  for (const auto& [token, count] : counts) {
    CHECK(token >= 0 && static_cast<size_t>(token) < logits.size()) << token;
    float& l = logits[token];
    l = l > 0.0f ? l / penalty : l * penalty;
  }
}

void ApplyPresenceFrequencyPenalty(
    float presence, float frequency,
    const std::unordered_map<int32_t, int32_t>& output_counts,
    std::span<float> logits) {
  if (presence == 0.0f && frequency == 0.0f) return;
  for (const auto& [token, count] : output_counts) {
    CHECK(token >= 0 && static_cast<size_t>(token) < logits.size()) << token;
    if (count <= 0) continue;
    logits[token] -= static_cast<float>(count) * frequency + presence;
  }
}

int32_t Argmax(std::span<const float> logits) {
  // The maximum over 8 independent lanes (vectorizes; `l > m ? l : m`
  // skips NaN), then the first index holding it: ties go to the lowest id.
  constexpr size_t kLanes = 8;
  float lane[kLanes];
  for (float& m : lane) m = kNegInf;
  const size_t n = logits.size();
  const float* l = logits.data();
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      lane[j] = l[i + j] > lane[j] ? l[i + j] : lane[j];
    }
  }
  float max = kNegInf;
  for (; i < n; ++i) max = l[i] > max ? l[i] : max;
  for (float m : lane) max = m > max ? m : max;
  if (!(max > kNegInf)) return -1;  // empty, all -inf or NaN
  for (i = 0; i < n; ++i) {
    if (l[i] == max) return static_cast<int32_t>(i);
  }
  return -1;  // unreachable: max is one of the values
}

void BuildCandidates(std::span<const float> logits, float temperature,
                     std::vector<Candidate>* out) {
  CHECK(temperature > 0.0f) << temperature;
  out->clear();
  const int32_t top = Argmax(logits);
  if (top < 0) return;
  const float max = logits[top];
  if (std::isinf(max)) {  // +inf logits share all the mass
    for (size_t i = 0; i < logits.size(); ++i) {
      if (logits[i] == max) out->push_back({1.0f, static_cast<int32_t>(i)});
    }
    return;
  }
  const float inv_t = 1.0f / temperature;
  // Blocks of kBlock: the exp loop vectorizes, the compaction stays scalar.
  constexpr size_t kBlock = 1024;
  float w[kBlock];
  out->resize(logits.size());
  Candidate* dst = out->data();
  for (size_t start = 0; start < logits.size(); start += kBlock) {
    const size_t n = std::min(kBlock, logits.size() - start);
    const float* l = logits.data() + start;
    // (l - max) <= 0, so the weight is in [0, 1]; exactly 1 at the max.
    // NaN and -inf give weight 0.
    for (size_t i = 0; i < n; ++i) w[i] = ExpApprox((l[i] - max) * inv_t);
    for (size_t i = 0; i < n; ++i) {
      *dst = {w[i], static_cast<int32_t>(start + i)};
      dst += w[i] > 0.0f;  // branch-free compaction
    }
  }
  out->resize(dst - out->data());
}

std::vector<TokenLogit> TopLogits(std::span<const float> logits, int32_t n) {
  std::vector<TokenLogit> top;
  if (n <= 0) return top;
  top.reserve(n + 1);
  auto before = [](float av, int32_t ai, float bv, int32_t bi) {
    return av > bv || (av == bv && ai < bi);
  };
  float worst = kNegInf;  // the smallest logit in `top` once it is full
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (l < worst || std::isnan(l)) continue;  // most tokens stop here
    const int32_t id = static_cast<int32_t>(i);
    if (static_cast<int32_t>(top.size()) == n &&
        !before(l, id, top.back().logit, top.back().id)) {
      continue;
    }
    size_t pos = top.size();
    top.push_back({id, l});
    while (pos > 0 && before(l, id, top[pos - 1].logit, top[pos - 1].id)) {
      top[pos] = top[pos - 1];
      --pos;
    }
    top[pos] = {id, l};
    if (static_cast<int32_t>(top.size()) > n) top.pop_back();
    if (static_cast<int32_t>(top.size()) == n) worst = top.back().logit;
  }
  return top;
}

void BuildTopKCandidates(std::span<const float> logits, float temperature,
                         int32_t k, std::vector<Candidate>* out) {
  CHECK(temperature > 0.0f) << temperature;
  CHECK_GT(k, 0);
  out->clear();
  const std::vector<TokenLogit> top = TopLogits(logits, k);
  if (top.empty() || !(top[0].logit > kNegInf)) return;
  const float max = top[0].logit;
  const float inv_t = 1.0f / temperature;
  for (const TokenLogit& t : top) {
    // +inf logits share all the mass, as in BuildCandidates.
    const float w = std::isinf(max) ? (t.logit == max ? 1.0f : 0.0f)
                                    : ExpApprox((t.logit - max) * inv_t);
    if (w > 0.0f) out->push_back({w, t.id});
  }
  std::sort(out->begin(), out->end(),
            [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
}

void ApplyMinP(float min_p, std::vector<Candidate>* cands) {
  if (!(min_p > 0.0f) || cands->empty()) return;
  const float threshold = min_p * MaxWeight(*cands);
  std::erase_if(*cands,
                [&](const Candidate& c) { return c.weight < threshold; });
}

void ApplyTopK(int32_t k, std::vector<Candidate>* cands) {
  if (k <= 0 || static_cast<size_t>(k) >= cands->size()) return;
  const uint32_t top_bits = Bits(MaxWeight(*cands));
  std::vector<int64_t> counts(kNumBins, 0);
  for (const Candidate& c : *cands) ++counts[Bin(c.weight, top_bits)];
  uint32_t bin = 0;
  int64_t before = 0;  // candidates in bins < bin
  while (before + counts[bin] < k) before += counts[bin++];
  const std::vector<Candidate> straddling = SortedBin(*cands, bin, top_bits);
  KeepThrough(straddling[k - before - 1], cands);
}

void ApplyTopP(float top_p, std::vector<Candidate>* cands) {
  if (!(top_p < 1.0f) || cands->size() <= 1) return;
  const uint32_t top_bits = Bits(MaxWeight(*cands));
  std::vector<double> mass(kNumBins, 0.0);
  for (const Candidate& c : *cands) mass[Bin(c.weight, top_bits)] += c.weight;
  double total = 0.0;
  for (double m : mass) total += m;
  const double target = static_cast<double>(top_p) * total;
  uint32_t bin = 0;
  double before = 0.0;  // mass in bins < bin; always < target
  while (bin + 1 < kNumBins && before + mass[bin] < target) {
    before += mass[bin++];
  }
  const std::vector<Candidate> straddling = SortedBin(*cands, bin, top_bits);
  if (straddling.empty()) return;  // rounding ran past every bin: keep all
  size_t keep = 0;
  double mass_before = before;
  while (keep < straddling.size() && mass_before < target) {
    mass_before += straddling[keep++].weight;
  }
  KeepThrough(straddling[std::max<size_t>(keep, 1) - 1], cands);
}

int32_t SampleCandidates(std::span<const Candidate> cands, double u) {
  if (cands.empty()) return -1;
  // Sums of blocks of kBlock candidates (four accumulators each, so the
  // adds pipeline), then a serial walk inside the one block that holds the
  // target. The summation pattern is fixed, so the draw is deterministic.
  constexpr size_t kBlock = 256;
  const size_t num_blocks = (cands.size() + kBlock - 1) / kBlock;
  std::vector<double> block_mass(num_blocks);
  double total = 0.0;
  for (size_t b = 0; b < num_blocks; ++b) {
    const size_t begin = b * kBlock;
    const size_t end = std::min(cands.size(), begin + kBlock);
    double a[4] = {0.0, 0.0, 0.0, 0.0};
    size_t i = begin;
    for (; i + 4 <= end; i += 4) {
      a[0] += cands[i].weight;
      a[1] += cands[i + 1].weight;
      a[2] += cands[i + 2].weight;
      a[3] += cands[i + 3].weight;
    }
    for (; i < end; ++i) a[0] += cands[i].weight;
    block_mass[b] = (a[0] + a[1]) + (a[2] + a[3]);
    total += block_mass[b];
  }
  const double target = u * total;
  double cumulative = 0.0;
  for (size_t b = 0; b < num_blocks; ++b) {
    if (cumulative + block_mass[b] <= target && b + 1 < num_blocks) {
      cumulative += block_mass[b];
      continue;
    }
    const size_t end = std::min(cands.size(), (b + 1) * kBlock);
    for (size_t i = b * kBlock; i < end; ++i) {
      cumulative += cands[i].weight;
      if (cumulative > target) return cands[i].id;
    }
    // Rounding inside this block: its last token, or walk on.
  }
  return cands.back().id;  // u * total rounded up to the full sum
}

}  // namespace weft::sampling
