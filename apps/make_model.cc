// `weft make-model`: writes a synthetic GGUF model with random weights in
// the tensor layout llama.cpp expects for the llama, qwen2, gemma3,
// qwen3moe, gpt-oss, qwen3, gemma2 or phi3 architecture (the last three in
// make_model_arch.cc), with the whole vocabulary (every tokenizer.* key)
// copied from another GGUF, so that it tokenizes like the real model and can
// be used for benchmarks and tests that need a particular shape.
//
// Weights are deterministic in --seed and independent of the thread count:
// element i of tensor T is a function of (seed, name of T, i) only.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "apps/make_model_arch.h"
#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "runtime/model_facts.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

// Tensor names and shapes as llama.cpp's loader wants them per architecture.
std::vector<TensorSpec> BuildSpecs(const ModelShape& s) {
  if (IsNewArch(s.arch)) return BuildNewArchSpecs(s);
  const uint64_t dim = s.dim, ffn = s.ffn, vocab = s.vocab;
  const uint64_t q_dim = s.heads * s.head_dim, kv_dim = s.kv_heads * s.head_dim;
  std::vector<TensorSpec> specs;
  specs.push_back({"token_embd.weight", {dim, vocab}, Init::kWeight});
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = StrFormat("blk.%lld.", static_cast<long long>(l));
    specs.push_back({p + "attn_norm.weight", {dim}, Init::kNorm});
    specs.push_back({p + "attn_q.weight", {dim, q_dim}, Init::kWeight});
    specs.push_back({p + "attn_k.weight", {dim, kv_dim}, Init::kWeight});
    specs.push_back({p + "attn_v.weight", {dim, kv_dim}, Init::kWeight});
    const bool oss = s.arch == "gpt-oss";
    if (s.arch == "qwen2" || oss) {
      specs.push_back({p + "attn_q.bias", {q_dim}, Init::kBias});
      specs.push_back({p + "attn_k.bias", {kv_dim}, Init::kBias});
      specs.push_back({p + "attn_v.bias", {kv_dim}, Init::kBias});
    }
    if (s.arch == "gemma3" || s.arch == "qwen3moe") {
      specs.push_back({p + "attn_q_norm.weight",
                       {static_cast<uint64_t>(s.head_dim)},
                       Init::kNorm});
      specs.push_back({p + "attn_k_norm.weight",
                       {static_cast<uint64_t>(s.head_dim)},
                       Init::kNorm});
    }
    specs.push_back({p + "attn_output.weight", {q_dim, dim}, Init::kWeight});
    if (oss) {
      specs.push_back({p + "attn_output.bias", {dim}, Init::kBias});
      specs.push_back({p + "attn_sinks.weight", {static_cast<uint64_t>(s.heads)}, Init::kBias});
    }
    if (s.arch == "gemma3") {
      specs.push_back({p + "post_attention_norm.weight", {dim}, Init::kNorm});
    }
    // gpt-oss's FFN input norm is named post_attention_norm.
    specs.push_back({p + (oss ? "post_attention_norm.weight" : "ffn_norm.weight"), {dim},
                     Init::kNorm});
    if (s.experts > 0) {
      const uint64_t ne = static_cast<uint64_t>(s.experts);
      specs.push_back({p + "ffn_gate_inp.weight", {dim, ne}, Init::kWeight});
      specs.push_back({p + "ffn_gate_exps.weight", {dim, ffn, ne}, Init::kWeight});
      specs.push_back({p + "ffn_up_exps.weight", {dim, ffn, ne}, Init::kWeight});
      specs.push_back({p + "ffn_down_exps.weight", {ffn, dim, ne}, Init::kWeight});
      if (oss) {
        specs.push_back({p + "ffn_gate_inp.bias", {ne}, Init::kBias});
        specs.push_back({p + "ffn_gate_exps.bias", {ffn, ne}, Init::kBias});
        specs.push_back({p + "ffn_up_exps.bias", {ffn, ne}, Init::kBias});
        specs.push_back({p + "ffn_down_exps.bias", {dim, ne}, Init::kBias});
      }
      continue;
    }
    specs.push_back({p + "ffn_gate.weight", {dim, ffn}, Init::kWeight});
    specs.push_back({p + "ffn_up.weight", {dim, ffn}, Init::kWeight});
    specs.push_back({p + "ffn_down.weight", {ffn, dim}, Init::kWeight});
    if (s.arch == "gemma3") {
      specs.push_back({p + "post_ffw_norm.weight", {dim}, Init::kNorm});
    }
  }
  specs.push_back({"output_norm.weight", {dim}, Init::kNorm});
  if (!s.tied) specs.push_back({"output.weight", {dim, vocab}, Init::kWeight});
  return specs;
}

bool IsWeightType(GgmlType t) { return runtime::FileTypeOf(t).has_value(); }

// The type of a matrix whose rows have `cols` elements: the requested one,
// or for rows it cannot hold a fallback (Q8_0, else F16), as llama.cpp's
// quantizer does.
GgmlType MatrixType(GgmlType want, uint64_t cols) {
  if (cols % TypeTraits(want).block_size == 0) return want;
  if (cols % 32 == 0) return GgmlType::kQ8_0;
  return GgmlType::kF16;
}

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// Mean 0, variance 1: the sum of four 16-bit uniforms (Irwin-Hall), which
// is bell-shaped and bounded (|x| < 3.47), so activations stay finite.
float NormalIsh(uint64_t h) {
  float s = 0;
  for (int i = 0; i < 4; ++i) s += static_cast<float>((h >> (16 * i)) & 0xffff);
  return (s / 65536.0f - 2.0f) * 1.7320508f;
}

// Generates and encodes one tensor, rows spread over `threads` threads.
StatusOr<std::vector<uint8_t>> MakeTensor(const TensorSpec& spec, GgmlType type,
                                          uint64_t seed, double std_dev,
                                          int threads) {
  const uint64_t cols = spec.dims[0];
  uint64_t rows = 1;
  for (size_t i = 1; i < spec.dims.size(); ++i) rows *= spec.dims[i];
  ASSIGN_OR_RETURN(uint64_t row_bytes, RowBytes(type, cols));
  std::vector<uint8_t> out(rows * row_bytes);
  const uint64_t tensor_seed = SplitMix64(seed ^ HashName(spec.name));
  const float center =
      spec.init == Init::kNorm ? 1.0f : (spec.init == Init::kFactor ? 1.5f : 0.0f);
  const float scale = spec.init == Init::kNorm
                          ? 0.01f
                          : (spec.init == Init::kFactor ? 0.4f : static_cast<float>(std_dev));
  std::vector<Status> errors(threads);
  auto work = [&](int t) {
    std::vector<float> row(cols);
    const uint64_t begin = rows * t / threads, end = rows * (t + 1) / threads;
    for (uint64_t r = begin; r < end; ++r) {
      for (uint64_t c = 0; c < cols; ++c) {
        const uint64_t h = SplitMix64(tensor_seed + r * cols + c);
        row[c] = center + scale * NormalIsh(h);
      }
      Status s = QuantizeRow(type, row.data(), out.data() + r * row_bytes,
                             static_cast<int64_t>(cols));
      if (!s.ok()) {
        errors[t] = s;
        return;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();
  for (const Status& s : errors) RETURN_IF_ERROR(s);
  return out;
}

void SetArchMetadata(const ModelShape& s, GgmlType type,
                     const std::string& name, gguf::GgufWriter* w) {
  const std::string a = s.arch + ".";
  w->SetString("general.architecture", s.arch);
  w->SetString("general.name", name);
  w->SetUint32("general.file_type", runtime::FileTypeOf(type).value_or(0));
  w->SetUint32("general.quantization_version", 2);
  w->SetUint32(a + "context_length", static_cast<uint32_t>(s.ctx));
  w->SetUint32(a + "embedding_length", static_cast<uint32_t>(s.dim));
  w->SetUint32(a + "block_count", static_cast<uint32_t>(s.layers));
  w->SetUint32(a + "feed_forward_length", static_cast<uint32_t>(s.ffn));
  w->SetUint32(a + "attention.head_count", static_cast<uint32_t>(s.heads));
  w->SetUint32(a + "attention.head_count_kv",
               static_cast<uint32_t>(s.kv_heads));
  w->SetUint32(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
  w->SetUint32(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  w->SetFloat32(a + "attention.layer_norm_rms_epsilon",
                static_cast<float>(s.eps));
  w->SetFloat32(a + "rope.freq_base", static_cast<float>(s.rope_base));
  w->SetUint32(a + "rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  w->SetUint32(a + "vocab_size", static_cast<uint32_t>(s.vocab));
  if (s.arch == "gemma3" || s.arch == "gpt-oss") {
    w->SetUint32(a + "attention.sliding_window",
                 static_cast<uint32_t>(s.sliding_window));
  }
  if (s.arch == "gpt-oss") {  // the real model's YaRN: 4k context x 32
    w->SetString(a + "rope.scaling.type", "yarn");
    w->SetFloat32(a + "rope.scaling.factor", 32.0f);
    w->SetUint32(a + "rope.scaling.original_context_length", 4096);
  }
  if (s.experts > 0) {
    w->SetUint32(a + "expert_count", static_cast<uint32_t>(s.experts));
    w->SetUint32(a + "expert_used_count", static_cast<uint32_t>(s.experts_used));
    w->SetUint32(a + "expert_feed_forward_length", static_cast<uint32_t>(s.ffn));
  }
  SetNewArchMetadata(s, w);
}

// Checks the flags; returns an empty string when they make a model.
std::string ValidateShape(const ModelShape& s) {
  const bool moe = s.arch == "qwen3moe" || s.arch == "gpt-oss";
  if (s.arch != "llama" && s.arch != "qwen2" && s.arch != "gemma3" && !moe &&
      !IsNewArch(s.arch)) {
    return "--arch must be llama, qwen2, gemma3, qwen3moe, gpt-oss, qwen3, gemma2 or phi3, "
           "not '" + s.arch + "'";
  }
  if (moe != (s.experts > 0)) {
    return moe ? "--experts is required for " + s.arch : "--experts needs a MoE --arch";
  }
  if (moe && (s.experts > 4096 || s.experts_used <= 0 || s.experts_used > s.experts)) {
    return "--experts must be in [1, 4096] and --experts-used in [1, --experts]";
  }
  constexpr int64_t kMaxDim = 1 << 20;
  const struct {
    const char* name;
    int64_t v;
  } dims[] = {{"--dim", s.dim},     {"--layers", s.layers},
              {"--heads", s.heads}, {"--kv-heads", s.kv_heads},
              {"--ffn", s.ffn},     {"--head-dim", s.head_dim},
              {"--ctx", s.ctx}};
  for (const auto& d : dims) {
    if (d.v <= 0 || d.v > kMaxDim) {
      return StrFormat("%s must be in [1, %lld] (got %lld)", d.name,
                       static_cast<long long>(kMaxDim),
                       static_cast<long long>(d.v));
    }
  }
  if (s.heads % s.kv_heads != 0)
    return "--heads must be a multiple of --kv-heads";
  if (s.layers > 4096) return "--layers must be at most 4096";
  if (s.head_dim % 2 != 0) return "the head dimension must be even (rope)";
  const double params =
      static_cast<double>(s.vocab) * s.dim * (s.tied ? 1 : 2) +
      static_cast<double>(s.layers) *
          (s.dim * s.head_dim * (2.0 * s.heads + 2.0 * s.kv_heads) +
           3.0 * s.dim * s.ffn * std::max<int64_t>(1, s.experts));
  if (params > 2e11)
    return StrFormat("model too large (%.3g parameters)", params);
  return "";
}

// The flags of `weft make-model`.
struct MakeModelOptions {
  // The model's shape; the flags fill arch and the sizes, the parser the
  // derived fields (kv_heads, head_dim, tied, eps, rope_base).
  ModelShape s;
  // GGUF whose tokenizer.* keys to copy (required).
  std::string vocab_path;
  // Output GGUF path (required).
  std::string out_path;
  // Weight type name.
  std::string type_name = "q8_0";
  // MoE: the type of the expert tensors (*_exps.weight); empty = type_name.
  // gpt-oss files keep their experts in MXFP4 and the rest in a float type
  // or Q8_0: --type f32 --expert-type mxfp4.
  std::string expert_type_name;
  // general.name; empty = DefaultModelName(arch).
  std::string name;
  // Random seed.
  int64_t seed = 1;
  // Quantization threads; 0 = all cores.
  int64_t threads = 0;
  // Standard deviation of weight matrices.
  double std_dev = 0.02;
  // RMS norm epsilon and rope.freq_base; 0 = the architecture's.
  double eps = 0;
  double rope_base = 0;
  // Omit output.weight (when given; unset: tied for gemma2/3 only).
  bool tied = false;
};

void RegisterMakeModelFlags(MakeModelOptions* o, FlagSet* flags) {
  ModelShape& s = o->s;
  flags->String("arch", &s.arch,
                 "llama | qwen2 | gemma3 | qwen3moe | gpt-oss | qwen3 | gemma2 | phi3");
  flags->Int("dim", &s.dim, "embedding length");
  flags->Int("layers", &s.layers, "number of blocks");
  flags->Int("heads", &s.heads, "attention (query) heads");
  flags->Int("kv-heads", &s.kv_heads, "key/value heads (0: same as --heads)");
  flags->Int("ffn", &s.ffn, "feed-forward hidden size (MoE: of each expert)");
  flags->Int("experts", &s.experts, "MoE: experts per layer");
  flags->Int("experts-used", &s.experts_used, "MoE: experts per token");
  flags->Int("head-dim", &s.head_dim, "per-head size (0: dim / heads)");
  flags->Int("ctx", &s.ctx, "context_length");
  flags->Int("sliding-window", &s.sliding_window, "gemma2/gemma3/gpt-oss sliding window");
  flags->Double("attn-softcap", &s.attn_softcap, "gemma2 attention logit soft-cap");
  flags->Double("final-softcap", &s.final_softcap, "gemma2 final logit soft-cap");
  flags->String("vocab-from", &o->vocab_path, "GGUF whose tokenizer.* keys to copy");
  flags->String("type", &o->type_name,
                "weight type: f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 iq4_nl iq4_xs q2_k q3_k "
                "q4_k q5_k q6_k mxfp4");
  flags->String("expert-type", &o->expert_type_name,
                "MoE: weight type of the expert tensors (default: --type)");
  flags->Int("seed", &o->seed, "random seed");
  flags->Double("std", &o->std_dev, "standard deviation of weight matrices");
  flags->Double("eps", &o->eps, "RMS norm epsilon (0: 1e-5 for llama, 1e-6 otherwise)");
  flags->Double("rope-base", &o->rope_base, "rope.freq_base (0: 1e4 for llama, 1e6 otherwise)");
  flags->Bool("tie-embeddings", &o->tied, "omit output.weight; unset: tied for gemma2/3 only");
  flags->String("name", &o->name, "general.name (empty: synthetic-ARCH)");
  flags->Int("threads", &o->threads, "quantization threads (0: all cores)");
  flags->String("output", &o->out_path, "output GGUF path", 'o');
}

int UsageError(const std::string& msg) {
  std::fprintf(stderr, "make-model: %s\n", msg.c_str());
  return 2;
}

// Parses and checks the flags and derives the shape's defaults; false with
// *rc the exit code when the command is done.
bool ParseMakeModelFlags(int argc, char** argv, MakeModelOptions* o, GgmlType* type, int* rc) {
  FlagSet flags(
      "weft make-model --arch A --dim N --layers N --heads N --kv-heads N "
      "--ffn N --vocab-from VOCAB.gguf --type T -o OUT.gguf",
      "Write a synthetic model with random weights (llama, qwen2, gemma3, "
      "qwen3moe, gpt-oss, qwen3, gemma2 or phi3 layout) and the vocabulary of another "
      "GGUF. 1-D tensors are F32; matrices whose rows do not fit the type's "
      "block fall back to q8_0 or f16. Output.weight is untied by default, but "
      "gemma2/3 tie it to token_embd (as the real models do).");
  RegisterMakeModelFlags(o, &flags);
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  *rc = 2;
  auto fail = [](const std::string& msg) {
    UsageError(msg);
    return false;
  };
  if (!args.empty()) return fail("unexpected argument '" + args[0] + "'");
  if (o->out_path.empty()) return fail("-o OUT.gguf is required");
  if (o->vocab_path.empty()) return fail("--vocab-from is required");
  std::optional<GgmlType> t = ParseTypeName(o->type_name);
  if (!t || !IsWeightType(*t) || !CanQuantize(*t)) {
    return fail("unsupported --type '" + o->type_name + "'");
  }
  *type = *t;
  if (o->expert_type_name.empty()) o->expert_type_name = o->type_name;
  std::optional<GgmlType> et = ParseTypeName(o->expert_type_name);
  if (!et || !IsWeightType(*et) || !CanQuantize(*et)) {
    return fail("unsupported --expert-type '" + o->expert_type_name + "'");
  }
  ModelShape& s = o->s;
  if (s.kv_heads == 0) s.kv_heads = s.heads;
  if (s.head_dim == 0 && s.heads > 0) {
    if (s.dim % s.heads != 0) {
      return fail("--dim must be a multiple of --heads (or give --head-dim)");
    }
    s.head_dim = s.dim / s.heads;
  }
  const bool gemma = s.arch == "gemma3" || s.arch == "gemma2";
  s.tied = flags.WasSet("tie-embeddings") ? o->tied : gemma;
  if (s.arch == "gemma2") s.tied = true;  // llama.cpp reads no output.weight there
  const bool llama = s.arch == "llama";
  s.eps = o->eps != 0 ? o->eps : (llama ? 1e-5 : 1e-6);
  s.rope_base = o->rope_base != 0 ? o->rope_base : (llama ? 1e4 : 1e6);
  if (!(s.eps > 0) || !(s.rope_base > 0) || !(o->std_dev > 0) || o->std_dev > 10) {
    return fail("--eps, --rope-base and --std must be positive (std <= 10)");
  }
  if (!(s.attn_softcap > 0) || !(s.final_softcap > 0)) {
    return fail("--attn-softcap and --final-softcap must be positive");
  }
  if (o->threads <= 0) o->threads = std::max(1u, std::thread::hardware_concurrency());
  o->threads = std::min<int64_t>(o->threads, 256);
  return true;
}

// Generates every tensor and writes the file; *params counts the weights.
// Returns 0, or the exit code.
int WriteModel(const MakeModelOptions& o, GgmlType type, const gguf::GgufFile& vf,
               uint64_t* params) {
  const ModelShape& s = o.s;
  gguf::GgufWriter writer;
  // general.file_type: MXFP4 experts make the file MXFP4_MOE, as gpt-oss's.
  const GgmlType expert_type = *ParseTypeName(o.expert_type_name);
  const GgmlType file_type =
      s.experts > 0 && expert_type == GgmlType::kMXFP4 ? expert_type : type;
  SetArchMetadata(s, file_type, o.name.empty() ? DefaultModelName(s.arch) : o.name, &writer);
  for (const gguf::MetadataEntry& e : vf.metadata()) {
    if (e.key.rfind("tokenizer.", 0) == 0) writer.Set(e.key, e.value);
  }
  for (const TensorSpec& spec : BuildSpecs(s)) {
    // The router and biases stay F32, as llama.cpp's quantizer leaves them.
    const bool f32 = spec.dims.size() == 1 || spec.init == Init::kBias ||
                     spec.name.find("ffn_gate_inp") != std::string::npos;
    const bool expert = spec.name.find("_exps.weight") != std::string::npos;
    const GgmlType want = expert ? expert_type : type;
    const GgmlType t = f32 ? GgmlType::kF32 : MatrixType(want, spec.dims[0]);
    auto data = MakeTensor(spec, t, static_cast<uint64_t>(o.seed), o.std_dev,
                           static_cast<int>(o.threads));
    if (!data.ok()) {
      std::fprintf(stderr, "make-model: %s: %s\n", spec.name.c_str(),
                   data.status().ToString().c_str());
      return 1;
    }
    uint64_t n = 1;
    for (uint64_t d : spec.dims) n *= d;
    *params += n;
    if (Status st = writer.AddTensor(spec.name, t, spec.dims, data.value()); !st.ok()) {
      std::fprintf(stderr, "make-model: %s\n", st.ToString().c_str());
      return 1;
    }
    if (t != want && !f32) {
      std::fprintf(stderr, "make-model: %s rows of %llu do not fit %s; using %s\n",
                   spec.name.c_str(), static_cast<unsigned long long>(spec.dims[0]),
                   std::string(TypeName(want)).c_str(), std::string(TypeName(t)).c_str());
    }
  }
  if (Status st = writer.WriteFile(o.out_path); !st.ok()) {
    std::fprintf(stderr, "make-model: %s\n", st.ToString().c_str());
    return 1;
  }
  return 0;
}

int RunMakeModel(int argc, char** argv) {
  MakeModelOptions o;
  GgmlType type = GgmlType::kF32;
  if (int rc; !ParseMakeModelFlags(argc, argv, &o, &type, &rc)) return rc;
  auto vocab_file = gguf::GgufFile::Open(o.vocab_path);
  if (!vocab_file.ok()) return UsageError(vocab_file.status().ToString());
  const gguf::GgufFile& vf = *vocab_file.value();
  auto tokens = vf.GetArray("tokenizer.ggml.tokens");
  if (!tokens.ok() || tokens.value()->items.empty()) {
    return UsageError(o.vocab_path + " has no tokenizer.ggml.tokens");
  }
  o.s.vocab = static_cast<int64_t>(tokens.value()->items.size());
  if (std::string err = ValidateShape(o.s); !err.empty()) return UsageError(err);

  const auto start = std::chrono::steady_clock::now();
  uint64_t params = 0;
  if (int rc = WriteModel(o, type, vf, &params); rc != 0) return rc;
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("wrote %s: %s, %s, %.3g params, vocab %lld, %.1f s\n", o.out_path.c_str(),
              o.s.arch.c_str(), std::string(TypeName(type)).c_str(),
              static_cast<double>(params), static_cast<long long>(o.s.vocab), secs);
  return 0;
}

}  // namespace

WEFT_COMMAND("make-model", "write a synthetic random-weight model",
             RunMakeModel);

}  // namespace weft::apps
