#include "apps/bench/bench_stats.h"

#include <algorithm>

namespace weft::apps {

Stat Summarize(std::vector<double> v) {
  Stat s;
  s.samples = v;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  return s;
}

namespace {

// The expert matrices one token reads in a layer: the first k experts'
// (all experts have the same shapes and types).
std::vector<const model::WeightMatrix*> TokenExperts(const model::LayerWeights& l, int64_t k) {
  std::vector<const model::WeightMatrix*> out;
  for (const auto* experts : {&l.moe.gate, &l.moe.up, &l.moe.down}) {
    for (size_t e = 0; e < experts->size() && static_cast<int64_t>(e) < k; ++e) {
      out.push_back(&(*experts)[e]);
    }
  }
  return out;
}

}  // namespace

uint64_t WeightBytes(const model::ModelWeights& w, int64_t experts_used) {
  auto bytes = [](const model::WeightMatrix& m) {
    return m.present() ? static_cast<uint64_t>(m.rows) * m.row_bytes : 0;
  };
  uint64_t b = bytes(w.output);
  for (const model::LayerWeights& l : w.layers) {
    b += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) +
         bytes(l.ffn_gate) + bytes(l.ffn_up) + bytes(l.ffn_down) + bytes(l.moe.router);
    for (const model::WeightMatrix* m : TokenExperts(l, experts_used)) b += bytes(*m);
  }
  return b;
}

WeightMacs CountWeightMacs(const model::ModelWeights& w, int64_t experts_used) {
  auto macs = [](const model::WeightMatrix& m) {
    return m.present() ? static_cast<uint64_t>(m.rows) * static_cast<uint64_t>(m.cols) : 0;
  };
  auto kind = [](const model::WeightMatrix& m) {
    return static_cast<int>(kernels::PeakKindOf(m.type));
  };
  WeightMacs n;
  if (w.output.present()) {
    n.output = macs(w.output);
    n.output_by_kind[kind(w.output)] = n.output;
  }
  for (const model::LayerWeights& l : w.layers) {
    std::vector<const model::WeightMatrix*> mats = TokenExperts(l, experts_used);
    for (const model::WeightMatrix* m :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.moe.router}) {
      mats.push_back(m);
    }
    for (const model::WeightMatrix* m : mats) {
      if (!m->present()) continue;
      n.layers += macs(*m);
      n.layers_by_kind[kind(*m)] += macs(*m);
    }
  }
  return n;
}

nlohmann::json StatJson(const Stat& s) {
  return nlohmann::json{{"median_s", s.median}, {"min_s", s.min}, {"max_s", s.max},
              {"samples_s", s.samples}};
}

}  // namespace weft::apps
