// Model::Forward: the decoder stack for llama / qwen2 / gemma3.
//
// Per layer (llama.cpp's graphs):
//   h = RMSNorm(x) ; q,k,v = h Wq,Wk,Wv (+bias) ; [gemma3: RMSNorm per head of q,k]
//   RoPE(q,k) ; write k,v to the cache ; a = softmax(q k^T * scale + mask) v
//   o = a Wo ; [gemma3: o = RMSNorm(o)] ; x += o
//   h = RMSNorm(x) ; f = (act(h Wgate) * h Wup) Wdown ; [gemma3: f = RMSNorm(f)] ; x += f
// then logits = RMSNorm(x) Wout for the rows that want them.
#include <algorithm>
#include <cmath>
#include <limits>

#include "model/model.h"
#include "model/ops.h"

namespace weft::model {
namespace {

// Scratch activations of one pass. T = tokens in the batch.
struct Scratch {
  std::vector<float> x;      // [T, n_embd] residual stream
  std::vector<float> xn;     // [T, n_embd] normed input of a sub-block
  std::vector<float> q;      // [T, n_head * head_dim_k]
  std::vector<float> k;      // [T, n_head_kv * head_dim_k]
  std::vector<float> v;      // [T, n_head_kv * head_dim_v]
  std::vector<float> attn;   // [T, n_head * head_dim_v]
  std::vector<float> o;      // [T, n_embd]
  std::vector<float> gate;   // [T, n_ff]
  std::vector<float> up;     // [T, n_ff]
  std::vector<float> rope_global;  // [T, n_rot] cos/sin of global layers
  std::vector<float> rope_local;   // [T, n_rot] cos/sin of local layers
};

void AddBias(float* y, const std::vector<float>& b, int64_t t, int64_t n) {
  if (b.empty()) return;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < n; ++j) y[i * n + j] += b[j];
  }
}

// Attention of the T batch tokens of `seq` (positions pos0..pos0+T-1)
// against cached positions, for one layer.
void Attention(const ModelConfig& c, int64_t il, const KvCache& cache,
               int32_t seq, int32_t pos0, int64_t t_count, const float* q,
               float* out, int n_threads) {
  const int64_t group = c.n_head / c.n_head_kv;
  const int64_t hd = c.head_dim_k, hdv = c.head_dim_v;
  const bool local = c.IsLocalLayer(il);
  const int32_t layer = static_cast<int32_t>(il);
  // Threads only pay off when there are enough multiply-adds.
  const int64_t work = t_count * c.n_head * (pos0 + t_count) * (hd + hdv);
  ParallelFor(t_count * c.n_head, work >= (int64_t{1} << 17) ? n_threads : 1,
              [&](int64_t b, int64_t e) {
    std::vector<float> scores;
    std::vector<float> acc(static_cast<size_t>(hdv));
    for (int64_t job = b; job < e; ++job) {
      const int64_t t = job / c.n_head, h = job % c.n_head;
      const int64_t kvh = h / group;
      const int32_t pos = pos0 + static_cast<int32_t>(t);
      // llama.cpp's standard SWA: key p is visible iff pos - p < window.
      int32_t lo = 0;
      if (local && pos >= c.sliding_window) {
        lo = pos - static_cast<int32_t>(c.sliding_window) + 1;
      }
      const float* qh = q + t * c.q_dim() + h * hd;
      scores.resize(static_cast<size_t>(pos - lo + 1));
      float mx = -std::numeric_limits<float>::infinity();
      for (int32_t p = lo; p <= pos; ++p) {
        float s = Dot(qh, cache.KeyRow(layer, seq, p) + kvh * hd, hd) * c.attn_scale;
        if (c.attn_softcap > 0) s = c.attn_softcap * std::tanh(s / c.attn_softcap);
        scores[p - lo] = s;
        mx = std::max(mx, s);
      }
      double sum = 0;
      for (float& s : scores) {
        s = std::exp(s - mx);
        sum += s;
      }
      const float inv = static_cast<float>(1.0 / sum);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int32_t p = lo; p <= pos; ++p) {
        const float w = scores[p - lo] * inv;
        const float* vr = cache.ValueRow(layer, seq, p) + kvh * hdv;
        for (int64_t d = 0; d < hdv; ++d) acc[d] += w * vr[d];
      }
      std::copy(acc.begin(), acc.end(), out + t * c.n_head * hdv + h * hdv);
    }
  });
}

}  // namespace

Status Model::Forward(const Batch& batch, KvCache* cache,
                      std::vector<float>* logits,
                      const ForwardOptions& options) const {
  CHECK(cache != nullptr && logits != nullptr);
  RETURN_IF_ERROR(Validate(batch, *cache));
  const ModelConfig& c = config_;
  const ModelWeights& w = weights_;
  const int64_t T = static_cast<int64_t>(batch.size());
  const int32_t seq = batch.seq_ids[0];
  const int32_t pos0 = batch.positions[0];
  const int nt = std::max(1, options.n_threads);
  RETURN_IF_ERROR(cache->Reserve(seq, pos0 + static_cast<int32_t>(T)));
  // Positions past the batch start are overwritten.
  cache->Truncate(seq, pos0);

  const int64_t E = c.n_embd;
  Scratch s;
  s.x.resize(T * E);
  s.xn.resize(T * E);
  s.q.resize(T * c.q_dim());
  s.k.resize(T * c.k_dim());
  s.v.resize(T * c.v_dim());
  s.attn.resize(T * c.n_head * c.head_dim_v);
  s.o.resize(T * E);
  s.gate.resize(T * c.n_ff);
  s.up.resize(T * c.n_ff);

  // Embeddings: [T, E].
  for (int64_t t = 0; t < T; ++t) {
    float* row = s.x.data() + t * E;
    DecodeRow(w.token_embd, batch.tokens[t], row);
    if (c.embd_scale != 1.0f) {
      for (int64_t i = 0; i < E; ++i) row[i] *= c.embd_scale;
    }
  }

  // RoPE tables for global and local layers: [T, n_rot].
  const float* ff = w.rope_freqs.empty() ? nullptr : w.rope_freqs.data();
  s.rope_global.resize(T * c.n_rot);
  s.rope_local.resize(T * c.n_rot);
  const int64_t first_local = c.swa_pattern > 0 && c.sliding_window > 0 ? 0 : -1;
  const int64_t first_global = c.swa_pattern > 0 ? c.swa_pattern - 1 : 0;
  for (int64_t t = 0; t < T; ++t) {
    RopeTable(c.LayerRope(first_global), c.n_rot, pos0 + static_cast<int32_t>(t),
              ff, s.rope_global.data() + t * c.n_rot);
    if (first_local >= 0) {
      RopeTable(c.LayerRope(first_local), c.n_rot, pos0 + static_cast<int32_t>(t),
                ff, s.rope_local.data() + t * c.n_rot);
    }
  }

  for (int64_t il = 0; il < c.n_layer; ++il) {
    const LayerWeights& L = w.layers[il];
    const int32_t layer = static_cast<int32_t>(il);
    // Attention block.
    for (int64_t t = 0; t < T; ++t) {
      RmsNorm(s.x.data() + t * E, L.attn_norm.data(), E, c.rms_eps, s.xn.data() + t * E);
    }
    MatMul(L.wq, s.xn.data(), T, s.q.data(), nt);
    MatMul(L.wk, s.xn.data(), T, s.k.data(), nt);
    MatMul(L.wv, s.xn.data(), T, s.v.data(), nt);
    AddBias(s.q.data(), L.bq, T, c.q_dim());
    AddBias(s.k.data(), L.bk, T, c.k_dim());
    AddBias(s.v.data(), L.bv, T, c.v_dim());
    if (c.qk_norm) {
      for (int64_t r = 0; r < T * c.n_head; ++r) {
        float* p = s.q.data() + r * c.head_dim_k;
        RmsNorm(p, L.q_norm.data(), c.head_dim_k, c.rms_eps, p);
      }
      for (int64_t r = 0; r < T * c.n_head_kv; ++r) {
        float* p = s.k.data() + r * c.head_dim_k;
        RmsNorm(p, L.k_norm.data(), c.head_dim_k, c.rms_eps, p);
      }
    }
    const std::vector<float>& table =
        c.IsLocalLayer(il) ? s.rope_local : s.rope_global;
    for (int64_t t = 0; t < T; ++t) {
      const float* cs = table.data() + t * c.n_rot;
      ApplyRope(s.q.data() + t * c.q_dim(), c.n_head, c.head_dim_k, c.n_rot,
                c.rope_type, cs);
      ApplyRope(s.k.data() + t * c.k_dim(), c.n_head_kv, c.head_dim_k, c.n_rot,
                c.rope_type, cs);
      const int32_t pos = pos0 + static_cast<int32_t>(t);
      std::copy_n(s.k.data() + t * c.k_dim(), c.k_dim(), cache->KeyRow(layer, seq, pos));
      std::copy_n(s.v.data() + t * c.v_dim(), c.v_dim(), cache->ValueRow(layer, seq, pos));
    }
    Attention(c, il, *cache, seq, pos0, T, s.q.data(), s.attn.data(), nt);
    MatMul(L.wo, s.attn.data(), T, s.o.data(), nt);
    for (int64_t t = 0; t < T; ++t) {
      float* o = s.o.data() + t * E;
      if (c.post_norms) RmsNorm(o, L.post_attn_norm.data(), E, c.rms_eps, o);
      float* x = s.x.data() + t * E;
      for (int64_t i = 0; i < E; ++i) x[i] += o[i];
    }
    // FFN block.
    for (int64_t t = 0; t < T; ++t) {
      RmsNorm(s.x.data() + t * E, L.ffn_norm.data(), E, c.rms_eps, s.xn.data() + t * E);
    }
    MatMul(L.ffn_gate, s.xn.data(), T, s.gate.data(), nt);
    MatMul(L.ffn_up, s.xn.data(), T, s.up.data(), nt);
    GatedActivation(c.activation, s.gate.data(), s.up.data(), T * c.n_ff);
    MatMul(L.ffn_down, s.gate.data(), T, s.o.data(), nt);
    for (int64_t t = 0; t < T; ++t) {
      float* o = s.o.data() + t * E;
      if (c.post_norms) RmsNorm(o, L.post_ffn_norm.data(), E, c.rms_eps, o);
      float* x = s.x.data() + t * E;
      for (int64_t i = 0; i < E; ++i) x[i] += o[i];
    }
  }
  cache->Commit(seq, pos0 + static_cast<int32_t>(T));

  // Logits for the wanted rows only: [n_out, n_vocab].
  std::vector<float> rows;
  int64_t n_out = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!batch.logits[t]) continue;
    rows.resize((n_out + 1) * E);
    RmsNorm(s.x.data() + t * E, w.output_norm.data(), E, c.rms_eps,
            rows.data() + n_out * E);
    ++n_out;
  }
  logits->assign(static_cast<size_t>(n_out * c.n_vocab), 0.0f);
  if (n_out > 0) {
    MatMul(w.output, rows.data(), n_out, logits->data(), nt);
    if (c.final_softcap > 0) SoftCap(logits->data(), n_out * c.n_vocab, c.final_softcap);
  }
  return OkStatus();
}

}  // namespace weft::model
