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

uint64_t WeightBytes(const model::ModelWeights& w) {
  auto bytes = [](const model::WeightMatrix& m) {
    return m.present() ? static_cast<uint64_t>(m.rows) * m.row_bytes : 0;
  };
  uint64_t b = bytes(w.output);
  for (const model::LayerWeights& l : w.layers) {
    b += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) +
         bytes(l.ffn_gate) + bytes(l.ffn_up) + bytes(l.ffn_down);
  }
  return b;
}

WeightMacs CountWeightMacs(const model::ModelWeights& w) {
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
    for (const model::WeightMatrix* m :
         {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) {
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
