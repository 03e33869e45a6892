#include "model/weights.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <memory>

#include "kernels/packed_x8.h"
#include "tensor/quant.h"
#include "util/check.h"
#include "util/large_alloc.h"
#include "util/strings.h"

namespace weft::model {
namespace {

std::string ShapeString(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(t.dims[i]);
  }
  return s + "]";
}

class Loader {
 public:
  explicit Loader(const gguf::GgufFile& f) : f_(f) {}

  // A matrix with ggml dims {cols, rows}.
  StatusOr<WeightMatrix> Matrix(const std::string& name, int64_t rows,
                                int64_t cols) {
    const gguf::TensorInfo* t = f_.FindTensor(name);
    if (t == nullptr) return Missing(name);
    if (t->dims.size() != 2 || t->dims[0] != static_cast<uint64_t>(cols) ||
        t->dims[1] != static_cast<uint64_t>(rows)) {
      return InvalidArgumentError(StrFormat(
          "%s: tensor %s has shape %s, want [%lld, %lld]", f_.path().c_str(),
          name.c_str(), ShapeString(*t).c_str(), static_cast<long long>(cols),
          static_cast<long long>(rows)));
    }
    return Checked(t, name, rows, cols);
  }

  // t as a [rows, cols] matrix once its shape is checked: its type must be
  // one Weft decodes and its size rows whole rows.
  StatusOr<WeightMatrix> Checked(const gguf::TensorInfo* t, const std::string& name,
                                 int64_t rows, int64_t cols) {
    if (!CanDequantize(t->type)) {
      return UnimplementedError(StrFormat(
          "%s: tensor %s has type %s, which Weft cannot dequantize",
          f_.path().c_str(), name.c_str(),
          std::string(TypeName(t->type)).c_str()));
    }
    auto rb = RowBytes(t->type, static_cast<uint64_t>(cols));
    if (!rb.ok()) {
      return InvalidArgumentError(StrFormat("%s: tensor %s: %s", f_.path().c_str(),
                                            name.c_str(),
                                            rb.status().message().c_str()));
    }
    if (*rb * static_cast<uint64_t>(rows) != t->nbytes) {
      return DataLossError(StrFormat("%s: tensor %s has %llu bytes, want %llu",
                                     f_.path().c_str(), name.c_str(),
                                     static_cast<unsigned long long>(t->nbytes),
                                     static_cast<unsigned long long>(*rb * rows)));
    }
    WeightMatrix m;
    m.name = name;
    m.type = t->type;
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = *rb;
    m.data = t->data;
    return m;
  }

  // The n 2-D slices [rows, cols] of a 3-D tensor with ggml dims {cols,
  // rows, n} (the experts of a *_exps tensor).
  StatusOr<std::vector<WeightMatrix>> Slices(const std::string& name, int64_t n,
                                             int64_t rows, int64_t cols) {
    const gguf::TensorInfo* t = f_.FindTensor(name);
    if (t == nullptr) return Missing(name);
    if (t->dims.size() != 3 || t->dims[0] != static_cast<uint64_t>(cols) ||
        t->dims[1] != static_cast<uint64_t>(rows) || t->dims[2] != static_cast<uint64_t>(n)) {
      return InvalidArgumentError(StrFormat(
          "%s: tensor %s has shape %s, want [%lld, %lld, %lld]", f_.path().c_str(),
          name.c_str(), ShapeString(*t).c_str(), static_cast<long long>(cols),
          static_cast<long long>(rows), static_cast<long long>(n)));
    }
    ASSIGN_OR_RETURN(WeightMatrix all, Checked(t, name, rows * n, cols));
    std::vector<WeightMatrix> out(static_cast<size_t>(n), all);
    for (int64_t e = 0; e < n; ++e) {
      out[static_cast<size_t>(e)].rows = rows;
      out[static_cast<size_t>(e)].data = all.row(e * rows);
      out[static_cast<size_t>(e)].name = StrFormat("%s[%lld]", name.c_str(),
                                                   static_cast<long long>(e));
    }
    return out;
  }

  // A 1-D vector of n elements, dequantized to float32.
  // any_shape: n elements in any shape (the per-expert biases).
  StatusOr<WeightVector> Vector(const std::string& name, int64_t n,
                                bool optional = false, bool any_shape = false) {
    const gguf::TensorInfo* t = f_.FindTensor(name);
    if (t == nullptr) {
      if (optional) return WeightVector();
      return Missing(name);
    }
    if (t->n_elements != static_cast<uint64_t>(n) ||
        (!any_shape && t->dims.size() != 1 && !(t->dims.size() == 2 && t->dims[1] == 1))) {
      return InvalidArgumentError(StrFormat(
          "%s: tensor %s has shape %s, want [%lld]", f_.path().c_str(),
          name.c_str(), ShapeString(*t).c_str(), static_cast<long long>(n)));
    }
    WeightVector v(static_cast<size_t>(n));
    Status s = DequantizeRow(t->type, t->data, v.data(), n);
    if (!s.ok()) {
      return InvalidArgumentError(StrFormat("%s: tensor %s: %s", f_.path().c_str(),
                                            name.c_str(), s.message().c_str()));
    }
    for (float x : v) {
      if (!std::isfinite(x)) {
        return DataLossError(StrFormat("%s: tensor %s has non-finite values",
                                       f_.path().c_str(), name.c_str()));
      }
    }
    return v;
  }

 private:
  Status Missing(const std::string& name) {
    return NotFoundError(
        StrFormat("%s: missing tensor %s", f_.path().c_str(), name.c_str()));
  }
  const gguf::GgufFile& f_;
};

// Rows [r0, r0 + rows) of m, as a matrix of its own (same bytes).
WeightMatrix RowView(const WeightMatrix& m, const char* part, int64_t r0, int64_t rows) {
  WeightMatrix v = m;
  v.name = m.name + "[" + part + "]";
  v.rows = rows;
  v.data = m.data + static_cast<uint64_t>(r0) * m.row_bytes;
  return v;
}

// q, k, v: separate tensors, or views onto a fused attn_qkv.
Status LoadQkv(Loader& ld, const ModelConfig& c, const std::string& p, LayerWeights* L) {
  if (!c.fused_qkv) {
    ASSIGN_OR_RETURN(L->wq, ld.Matrix(p + "attn_q.weight", c.q_dim(), c.n_embd));
    ASSIGN_OR_RETURN(L->wk, ld.Matrix(p + "attn_k.weight", c.k_dim(), c.n_embd));
    ASSIGN_OR_RETURN(L->wv, ld.Matrix(p + "attn_v.weight", c.v_dim(), c.n_embd));
    return OkStatus();
  }
  ASSIGN_OR_RETURN(WeightMatrix qkv, ld.Matrix(p + "attn_qkv.weight",
                                               c.q_dim() + c.k_dim() + c.v_dim(), c.n_embd));
  L->wq = RowView(qkv, "q", 0, c.q_dim());
  L->wk = RowView(qkv, "k", c.q_dim(), c.k_dim());
  L->wv = RowView(qkv, "v", c.q_dim() + c.k_dim(), c.v_dim());
  return OkStatus();
}

// gate and up: separate tensors, or views onto phi3's ffn_up [2 * n_ff rows].
Status LoadGateUp(Loader& ld, const ModelConfig& c, const std::string& p, LayerWeights* L) {
  if (!c.fused_gate_up) {
    ASSIGN_OR_RETURN(L->ffn_gate, ld.Matrix(p + "ffn_gate.weight", c.n_ff, c.n_embd));
    ASSIGN_OR_RETURN(L->ffn_up, ld.Matrix(p + "ffn_up.weight", c.n_ff, c.n_embd));
    return OkStatus();
  }
  ASSIGN_OR_RETURN(WeightMatrix gu, ld.Matrix(p + "ffn_up.weight", 2 * c.n_ff, c.n_embd));
  L->ffn_gate = RowView(gu, "gate", 0, c.n_ff);
  L->ffn_up = RowView(gu, "up", c.n_ff, c.n_ff);
  return OkStatus();
}

// rope_freqs (llama3), else phi3's rope_factors_long / _short.
StatusOr<WeightVector> LoadRopeFactors(Loader& ld, const ModelConfig& c, bool long_rope) {
  ASSIGN_OR_RETURN(WeightVector v, ld.Vector("rope_freqs.weight", c.n_rot / 2, true));
  if (!v.empty() || !c.has_long_short_rope) return v;
  const std::string name = long_rope ? "rope_factors_long.weight" : "rope_factors_short.weight";
  ASSIGN_OR_RETURN(v, ld.Vector(name, c.n_rot / 2, true));
  if (!v.empty()) return v;
  return ld.Vector("blk.0." + name, c.n_rot / 2);
}

}  // namespace

kernels::MatMulArgs MatMulArgsFor(const WeightMatrix& w, const float* x, float* y, int64_t m,
                                  kernels::ThreadPool* pool, kernels::MatMulScratch* scratch) {
  kernels::MatMulArgs a;
  a.w_type = w.type;
  a.w = w.x8 != nullptr ? w.x8 : w.data;
  a.w_x8 = w.x8 != nullptr;
  a.w_row_bytes = w.row_bytes;
  a.x = x;
  a.y = y;
  a.m = m;
  a.n = w.rows;
  a.k = w.cols;
  a.pool = pool;
  a.scratch = scratch;
  return a;
}

StatusOr<ModelWeights> LoadWeights(const gguf::GgufFile& file,
                                   const ModelConfig& c, bool long_rope) {
  Loader ld(file);
  ModelWeights w;
  ASSIGN_OR_RETURN(w.token_embd, ld.Matrix("token_embd.weight", c.n_vocab, c.n_embd));
  if (c.tied_output) {
    w.output = w.token_embd;
  } else {
    ASSIGN_OR_RETURN(w.output, ld.Matrix("output.weight", c.n_vocab, c.n_embd));
  }
  ASSIGN_OR_RETURN(w.output_norm, ld.Vector("output_norm.weight", c.n_embd));
  ASSIGN_OR_RETURN(w.rope_freqs, LoadRopeFactors(ld, c, long_rope));
  for (float x : w.rope_freqs) {
    if (!(x > 0)) {
      return InvalidArgumentError(StrFormat(
          "%s: the RoPE frequency factors have a non-positive factor",
          file.path().c_str()));
    }
  }
  w.layers.resize(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    LayerWeights& L = w.layers[static_cast<size_t>(il)];
    const std::string p = StrFormat("blk.%lld.", static_cast<long long>(il));
    ASSIGN_OR_RETURN(L.attn_norm, ld.Vector(p + "attn_norm.weight", c.n_embd));
    RETURN_IF_ERROR(LoadQkv(ld, c, p, &L));
    if (c.qkv_bias) {
      ASSIGN_OR_RETURN(L.bq, ld.Vector(p + "attn_q.bias", c.q_dim()));
      ASSIGN_OR_RETURN(L.bk, ld.Vector(p + "attn_k.bias", c.k_dim()));
      ASSIGN_OR_RETURN(L.bv, ld.Vector(p + "attn_v.bias", c.v_dim()));
    }
    ASSIGN_OR_RETURN(L.wo, ld.Matrix(p + "attn_output.weight", c.n_embd,
                                     c.n_head * c.head_dim_v));
    if (c.attn_out_bias) {
      ASSIGN_OR_RETURN(L.bo, ld.Vector(p + "attn_output.bias", c.n_embd));
    }
    if (c.attn_sinks) {
      ASSIGN_OR_RETURN(L.sinks, ld.Vector(p + "attn_sinks.weight", c.n_head));
    }
    if (c.qk_norm) {
      ASSIGN_OR_RETURN(L.q_norm, ld.Vector(p + "attn_q_norm.weight", c.head_dim_k));
      ASSIGN_OR_RETURN(L.k_norm, ld.Vector(p + "attn_k_norm.weight", c.head_dim_k));
    }
    if (c.post_norms) {
      ASSIGN_OR_RETURN(L.post_attn_norm,
                       ld.Vector(p + "post_attention_norm.weight", c.n_embd));
      ASSIGN_OR_RETURN(L.post_ffn_norm,
                       ld.Vector(p + "post_ffw_norm.weight", c.n_embd));
    }
    // gpt-oss names its FFN input norm post_attention_norm.
    const char* ffn_norm = c.arch == Arch::kGptOss ? "post_attention_norm.weight"
                                                   : "ffn_norm.weight";
    ASSIGN_OR_RETURN(L.ffn_norm, ld.Vector(p + ffn_norm, c.n_embd));
    if (c.is_moe()) {
      MoeLayerWeights& m = L.moe;
      const int64_t ne = c.n_expert, ff = c.n_ff_exp;
      ASSIGN_OR_RETURN(m.router, ld.Matrix(p + "ffn_gate_inp.weight", ne, c.n_embd));
      ASSIGN_OR_RETURN(m.gate, ld.Slices(p + "ffn_gate_exps.weight", ne, ff, c.n_embd));
      ASSIGN_OR_RETURN(m.up, ld.Slices(p + "ffn_up_exps.weight", ne, ff, c.n_embd));
      ASSIGN_OR_RETURN(m.down, ld.Slices(p + "ffn_down_exps.weight", ne, c.n_embd, ff));
      if (c.arch == Arch::kGptOss) {
        ASSIGN_OR_RETURN(m.router_bias, ld.Vector(p + "ffn_gate_inp.bias", ne));
        ASSIGN_OR_RETURN(m.gate_bias, ld.Vector(p + "ffn_gate_exps.bias", ne * ff, false, true));
        ASSIGN_OR_RETURN(m.up_bias, ld.Vector(p + "ffn_up_exps.bias", ne * ff, false, true));
        ASSIGN_OR_RETURN(m.down_bias,
                         ld.Vector(p + "ffn_down_exps.bias", ne * c.n_embd, false, true));
      }
      continue;
    }
    RETURN_IF_ERROR(LoadGateUp(ld, c, p, &L));
    ASSIGN_OR_RETURN(L.ffn_down, ld.Matrix(p + "ffn_down.weight", c.n_embd, c.n_ff));
  }
  return w;
}

namespace {

bool Packable(const WeightMatrix& m) { return m.present() && kernels::CanPackX8(m.type); }

// Copies m into dst (its x8 form) in slices of about 4 MiB (whole groups),
// each released from the file once copied, so the original and its copy
// are never both resident.
void RepackOne(const gguf::GgufFile& file, WeightMatrix* m, uint8_t* dst) {
  const size_t row_bytes = kernels::X8RowBytes(m->type, m->cols);
  const int64_t slice = std::max<int64_t>(8, int64_t{4 << 20} / static_cast<int64_t>(row_bytes) / 8 * 8);
  for (int64_t r0 = 0; r0 < m->rows; r0 += slice) {
    const int64_t n = std::min(slice, m->rows - r0);
    kernels::PackX8(m->type, m->row(r0), m->row_bytes, n, m->cols,
                    dst + static_cast<size_t>(r0) * row_bytes);
    file.ReleasePages(m->row(r0), static_cast<size_t>(n) * m->row_bytes);
  }
  m->x8 = dst;
}

}  // namespace

void RepackWeightsX8(const gguf::GgufFile& file, ModelWeights* w) {
  std::vector<WeightMatrix*> mats;
  for (LayerWeights& L : w->layers) {
    for (WeightMatrix* m : {&L.wq, &L.wk, &L.wv, &L.wo, &L.ffn_gate, &L.ffn_up, &L.ffn_down,
                            &L.moe.router}) {
      if (Packable(*m)) mats.push_back(m);
    }
    for (auto* experts : {&L.moe.gate, &L.moe.up, &L.moe.down}) {
      for (WeightMatrix& m : *experts) {
        if (Packable(m)) mats.push_back(&m);
      }
    }
  }
  if (Packable(w->output)) mats.push_back(&w->output);
  if (mats.empty()) return;
  // One buffer for all (64-byte aligned slots), on huge pages where
  // available: per-matrix buffers rounded to 2 MiB pages each would waste
  // most of a page per small matrix (+190 MB resident on Gemma 3 270M).
  std::vector<size_t> offsets;
  size_t total = 0;
  for (const WeightMatrix* m : mats) {
    offsets.push_back(total);
    total += (kernels::PackedX8Bytes(m->type, m->rows, m->cols) + 63) / 64 * 64;
  }
  std::shared_ptr<uint8_t> buf(LargeAlloc(total).release(), LargeFree());
  CHECK(buf != nullptr) << "out of memory repacking the weights (" << total << " bytes)";
  for (size_t i = 0; i < mats.size(); ++i) RepackOne(file, mats[i], buf.get() + offsets[i]);
  w->x8_buffers.push_back(std::move(buf));
}

}  // namespace weft::model
