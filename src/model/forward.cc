// Model::Forward: the decoder stack for llama / qwen2 / gemma3 / qwen3 /
// gemma2 / phi3 on the fast
// kernels (kernels/matmul.h, kernels/kernel_table.h), over a varlen batch of
// tokens from one or more sequences.
//
// Per layer (llama.cpp's graphs):
//   h = RMSNorm(x) ; q,k,v = h Wq,Wk,Wv (+bias) ; [gemma3, qwen3: RMSNorm per head of q,k]
//   RoPE(q,k) ; write k,v to the cache ; a = softmax(q k^T * scale + mask) v
//   o = a Wo ; [gemma2/3: o = RMSNorm(o)] ; x += o  [gpt-oss: sinks in the softmax, Wo bias]
//   h = RMSNorm(x) ; f = (act(h Wgate) * h Wup) Wdown ; [gemma2/3: f = RMSNorm(f)] ; x += f
//   [MoE: f = the router's top-k experts' FFNs of h, weighted (model/moe.h)]
// (phi3's fused attn_qkv and gate+up ffn_up arrive as row views: weights.h.)
// then logits = RMSNorm(x) Wout for the rows that want them.
//
// Every step is either per token (norms, RoPE, activations, residuals, the
// int8 activation quantization inside MatMul) or a dot product of one token
// row with one weight row / one cached row, so a token's result never
// depends on which other tokens share the batch: mixing sequences is
// bitwise identical to running each alone.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>

#include "kernels/isa.h"
#include "model/attention.h"
#include "model/model.h"
#include "model/moe.h"
#include "model/ops.h"

namespace weft::model {

// Scratch activations, grown on demand and kept between passes (guarded by
// Model::mu_). T = tokens in the batch.
struct ForwardScratch {
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
  std::vector<float> rows;   // [n_out, n_embd] normed rows that want logits
  std::vector<std::vector<float>> scores;  // per pool thread: attention scratch
  std::vector<std::vector<float>> decoded;  // per pool thread: [cols] (fallback)
  kernels::MatMulScratch matmul;            // quantized activations
  MoeScratch moe;                           // mixture-of-experts FFN
};

Model::Model() : scratch_(std::make_unique<ForwardScratch>()) {}
Model::~Model() = default;

kernels::ThreadPool* Model::Pool(int n_threads) const {
  if (n_threads <= 1) return nullptr;
  if (pool_ == nullptr || pool_->num_threads() != n_threads) {
    kernels::ThreadPoolOptions o;
    o.num_threads = n_threads;
    pool_ = std::make_unique<kernels::ThreadPool>(o);
  }
  return pool_.get();
}

namespace {

struct Ctx {
  const kernels::KernelTable& kt;
  kernels::ThreadPool* pool;  // null: inline
  ForwardScratch& s;
  int n_threads;
  bool float_activations;     // ForwardOptions::float_activations
};

template <typename Fn>
void ForEach(const Ctx& cx, int64_t n, Fn&& fn) {
  if (cx.pool != nullptr && n > 1) {
    cx.pool->ParallelFor(n, fn);
  } else {
    for (int64_t i = 0; i < n; ++i) fn(i, 0);
  }
}

// One product y[m, :] = x[m, :] W^T of a LinearGroup. x: [m, W.cols],
// y: [m, W.rows].
struct LinearOp {
  const WeightMatrix* w;
  const float* x;
  float* y;
};

// The products in one parallel region (kernels::MatMulMany: the ones with
// the same x quantize it once) for the formats the kernels support, else
// (or with float_activations) rows dequantized by the reference decoder and
// dotted in float32 with the table's dot_f32. Results are bitwise those of
// one call per product.
void LinearGroup(const Ctx& cx, std::initializer_list<LinearOp> ops, int64_t m) {
  kernels::MatMulArgs args[kernels::kMaxMatMulGroup];
  int n = 0;
  for (const LinearOp& op : ops) {
    const WeightMatrix& w = *op.w;
    if (kernels::MatMulSupports(w.type) &&
        (!cx.float_activations || w.type == GgmlType::kF32)) {
      CHECK_LT(n, kernels::kMaxMatMulGroup);
      args[n++] = MatMulArgsFor(w, op.x, op.y, m, cx.pool, &cx.s.matmul);
      continue;
    }
    constexpr int64_t kRows = 16;
    for (auto& d : cx.s.decoded) d.resize(static_cast<size_t>(w.cols));
    ForEach(cx, (w.rows + kRows - 1) / kRows, [&](int64_t blk, int thread) {
      float* row = cx.s.decoded[thread].data();
      for (int64_t r = blk * kRows; r < std::min(w.rows, (blk + 1) * kRows); ++r) {
        DecodeRow(w, r, row);
        for (int64_t t = 0; t < m; ++t) {
          op.y[t * w.rows + r] = cx.kt.dot_f32(op.x + t * w.cols, row, w.cols);
        }
      }
    });
  }
  if (n > 0) kernels::MatMulMany(cx.kt, args, n);
}

void Linear(const Ctx& cx, const WeightMatrix& w, const float* x, int64_t m, float* y) {
  LinearGroup(cx, {LinearOp{&w, x, y}}, m);
}

void AddBias(float* y, const std::vector<float>& b, int64_t t, int64_t n) {
  if (b.empty()) return;
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < n; ++j) y[i * n + j] += b[j];
  }
}

void Grow(std::vector<float>* v, int64_t n) {
  if (static_cast<int64_t>(v->size()) < n) v->resize(static_cast<size_t>(n));
}

// Grows the scratch activations for a batch of T tokens on cx.n_threads.
void GrowScratch(const Ctx& cx, const ModelConfig& c, int64_t T) {
  ForwardScratch& s = cx.s;
  const int64_t E = c.n_embd;
  Grow(&s.x, T * E);
  Grow(&s.xn, T * E);
  Grow(&s.q, T * c.q_dim());
  Grow(&s.k, T * c.k_dim());
  Grow(&s.v, T * c.v_dim());
  Grow(&s.attn, T * c.n_head * c.head_dim_v);
  Grow(&s.o, T * E);
  Grow(&s.gate, T * c.n_ff);
  Grow(&s.up, T * c.n_ff);
  if (static_cast<int>(s.scores.size()) < cx.n_threads) {
    s.scores.resize(static_cast<size_t>(cx.n_threads));
    s.decoded.resize(static_cast<size_t>(cx.n_threads));
  }
  for (auto& sc : s.scores) {
    Grow(&sc, AttentionScratchFloats(c));
  }
}

// Embeddings into the residual stream x: [T, E]; then the RoPE tables for
// global and local layers: [T, n_rot].
void EmbedAndRope(const Ctx& cx, const ModelConfig& c, const ModelWeights& w,
                  const Batch& batch) {
  ForwardScratch& s = cx.s;
  const int64_t T = static_cast<int64_t>(batch.size());
  const int64_t E = c.n_embd;
  for (int64_t t = 0; t < T; ++t) {
    float* row = s.x.data() + t * E;
    DecodeRow(w.token_embd, batch.tokens[t], row);
    if (c.embd_scale != 1.0f) {
      for (int64_t i = 0; i < E; ++i) row[i] *= c.embd_scale;
    }
  }
  const float* ff = w.rope_freqs.empty() ? nullptr : w.rope_freqs.data();
  Grow(&s.rope_global, T * c.n_rot);
  Grow(&s.rope_local, T * c.n_rot);
  const int64_t first_local = c.swa_pattern > 0 && c.sliding_window > 0 ? 0 : -1;
  const int64_t first_global = c.swa_pattern > 0 ? c.swa_pattern - 1 : 0;
  for (int64_t t = 0; t < T; ++t) {
    RopeTable(c.LayerRope(first_global), c.n_rot, batch.positions[t], ff,
              s.rope_global.data() + t * c.n_rot);
    if (first_local >= 0) {
      RopeTable(c.LayerRope(first_local), c.n_rot, batch.positions[t], ff,
                s.rope_local.data() + t * c.n_rot);
    }
  }
}

// A sub-block's input: xn = rms_norm(x) * norm, token by token.
void NormInput(const Ctx& cx, const ModelConfig& c, const std::vector<float>& norm,
               int64_t T) {
  const int64_t E = c.n_embd;
  for (int64_t t = 0; t < T; ++t) {
    cx.kt.rms_norm(cx.s.x.data() + t * E, norm.data(), E, c.rms_eps, cx.s.xn.data() + t * E);
  }
}

// A sub-block's output o back into the residual stream: x += o (normed
// first with post_norm on post-norm architectures).
void AddResidual(const Ctx& cx, const ModelConfig& c, const std::vector<float>& post_norm,
                 int64_t T) {
  const int64_t E = c.n_embd;
  for (int64_t t = 0; t < T; ++t) {
    float* o = cx.s.o.data() + t * E;
    if (c.post_norms) cx.kt.rms_norm(o, post_norm.data(), E, c.rms_eps, o);
    float* x = cx.s.x.data() + t * E;
    for (int64_t i = 0; i < E; ++i) x[i] += o[i];
  }
}

void AttentionBlock(const Ctx& cx, const AttentionContext& ax, const ModelConfig& c,
                    const LayerWeights& L, int64_t il, const Batch& batch, KvStorage* cache) {
  ForwardScratch& s = cx.s;
  const kernels::KernelTable& kt = cx.kt;
  const int64_t T = static_cast<int64_t>(batch.size());
  const int32_t layer = static_cast<int32_t>(il);
  NormInput(cx, c, L.attn_norm, T);
  LinearGroup(cx, {LinearOp{&L.wq, s.xn.data(), s.q.data()},
                   LinearOp{&L.wk, s.xn.data(), s.k.data()},
                   LinearOp{&L.wv, s.xn.data(), s.v.data()}}, T);
  AddBias(s.q.data(), L.bq, T, c.q_dim());
  AddBias(s.k.data(), L.bk, T, c.k_dim());
  AddBias(s.v.data(), L.bv, T, c.v_dim());
  if (c.qk_norm) {
    for (int64_t r = 0; r < T * c.n_head; ++r) {
      float* p = s.q.data() + r * c.head_dim_k;
      kt.rms_norm(p, L.q_norm.data(), c.head_dim_k, c.rms_eps, p);
    }
    for (int64_t r = 0; r < T * c.n_head_kv; ++r) {
      float* p = s.k.data() + r * c.head_dim_k;
      kt.rms_norm(p, L.k_norm.data(), c.head_dim_k, c.rms_eps, p);
    }
  }
  const bool neox = c.rope_type == RopeType::kNeox;
  const std::vector<float>& table = c.IsLocalLayer(il) ? s.rope_local : s.rope_global;
  for (int64_t t = 0; t < T; ++t) {
    const float* cs = table.data() + t * c.n_rot;
    kt.rope(s.q.data() + t * c.q_dim(), c.n_head, c.head_dim_k, c.n_rot, neox, cs);
    kt.rope(s.k.data() + t * c.k_dim(), c.n_head_kv, c.head_dim_k, c.n_rot, neox, cs);
  }
  WriteKv(c, layer, batch, s.k.data(), s.v.data(), cache);
  AttentionContext lax = ax;
  if (!L.sinks.empty()) lax.sinks = L.sinks.data();
  Attention(lax, c, layer, *cache, batch, s.q.data(), s.attn.data());
  Linear(cx, L.wo, s.attn.data(), T, s.o.data());
  AddBias(s.o.data(), L.bo, T, c.n_embd);
  AddResidual(cx, c, L.post_attn_norm, T);
}

void FfnBlock(const Ctx& cx, const ModelConfig& c, const LayerWeights& L, int64_t T) {
  ForwardScratch& s = cx.s;
  NormInput(cx, c, L.ffn_norm, T);
  if (c.is_moe()) {
    const MoeContext mc{&cx.kt, cx.pool, &s.matmul, cx.float_activations};
    MoeFfn(mc, c, L.moe, s.xn.data(), T, &s.moe, s.o.data());
    AddResidual(cx, c, L.post_ffn_norm, T);
    return;
  }
  LinearGroup(cx, {LinearOp{&L.ffn_gate, s.xn.data(), s.gate.data()},
                   LinearOp{&L.ffn_up, s.xn.data(), s.up.data()}}, T);
  // Per token row: a vector kernel's scalar tail rounds differently, so
  // one call over T * n_ff would make a token's result depend on T.
  auto* act = c.activation == FfnActivation::kSilu ? cx.kt.silu : cx.kt.gelu;
  for (int64_t t = 0; t < T; ++t) {
    float* g = s.gate.data() + t * c.n_ff;
    act(g, s.up.data() + t * c.n_ff, g, c.n_ff);
  }
  Linear(cx, L.ffn_down, s.gate.data(), T, s.o.data());
  AddResidual(cx, c, L.post_ffn_norm, T);
}

// Logits for the wanted rows only: [n_out, n_vocab].
void OutputLogits(const Ctx& cx, const ModelConfig& c, const ModelWeights& w,
                  const Batch& batch, std::vector<float>* logits) {
  ForwardScratch& s = cx.s;
  const int64_t T = static_cast<int64_t>(batch.size());
  const int64_t E = c.n_embd;
  int64_t n_out = 0;
  for (int64_t t = 0; t < T; ++t) n_out += batch.logits[t] != 0;
  Grow(&s.rows, n_out * E);
  n_out = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!batch.logits[t]) continue;
    cx.kt.rms_norm(s.x.data() + t * E, w.output_norm.data(), E, c.rms_eps,
                   s.rows.data() + n_out * E);
    ++n_out;
  }
  logits->resize(static_cast<size_t>(n_out * c.n_vocab));
  if (n_out > 0) {
    Linear(cx, w.output, s.rows.data(), n_out, logits->data());
    if (c.final_softcap > 0) SoftCap(logits->data(), n_out * c.n_vocab, c.final_softcap);
  }
}

}  // namespace

Status Model::Forward(const Batch& batch, KvStorage* cache,
                      std::vector<float>* logits,
                      const ForwardOptions& options) const {
  CHECK(cache != nullptr && logits != nullptr);
  std::vector<SeqSpan> spans;
  RETURN_IF_ERROR(Validate(batch, *cache, &spans));
  for (const SeqSpan& sp : spans) {
    RETURN_IF_ERROR(cache->Reserve(sp.seq, sp.start + sp.count));
  }
  // Positions past each sequence's batch start are overwritten.
  for (const SeqSpan& sp : spans) cache->Truncate(sp.seq, sp.start);

  std::lock_guard<std::mutex> lock(mu_);
  const ModelConfig& c = config_;
  const int64_t T = static_cast<int64_t>(batch.size());
  const int nt = std::max(1, options.n_threads);
  kernels::ThreadPool* pool = Pool(nt);
  ForwardScratch& s = *scratch_;
  const Ctx cx{options.kernels != nullptr ? *options.kernels : kernels::Kernels(),
               pool, s, pool != nullptr ? pool->num_threads() : 1,
               options.float_activations};
  GrowScratch(cx, c, T);
  const AttentionContext ax{&cx.kt, cx.pool, &s.scores};

  EmbedAndRope(cx, c, weights_, batch);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    AttentionBlock(cx, ax, c, weights_.layers[il], il, batch, cache);
    FfnBlock(cx, c, weights_.layers[il], T);
  }
  for (const SeqSpan& sp : spans) cache->Commit(sp.seq, sp.start + sp.count);
  OutputLogits(cx, c, weights_, batch, logits);
  return OkStatus();
}

}  // namespace weft::model
