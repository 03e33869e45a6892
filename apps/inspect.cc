// `weft inspect MODEL`: describes a GGUF file (architecture, sizes,
// quantization mix, hyper-parameters, tokenizer) as text or JSON, optionally
// with every tensor and the CPU features this binary detected.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/command.h"
#include "apps/flags.h"
#include "gguf/gguf.h"
#include "kernels/matmul.h"
#include "kernels/packed_x8.h"
#include "runtime/chat_template_choice.h"
#include "tensor/quant.h"
#include "tensor/types.h"
#include "tokenizer/vocab.h"
#include "util/cpu_features.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Json = nlohmann::ordered_json;
using gguf::Array;
using gguf::GgufFile;
using gguf::Value;
using gguf::ValueType;

// Longest array written in full into the JSON metadata; longer arrays are
// summarized as {"type", "count", "head"}.
constexpr size_t kMaxJsonArray = 16;

Json ToJson(const Value& v, size_t max_items) {
  switch (v.type()) {
    case ValueType::kString: return v.str();
    case ValueType::kBool: return std::get<bool>(v.storage());
    case ValueType::kFloat32:
    case ValueType::kFloat64: return v.AsDouble();
    case ValueType::kUint8:
    case ValueType::kUint16:
    case ValueType::kUint32:
    case ValueType::kUint64: return v.AsUint64();
    case ValueType::kArray: {
      const Array& a = v.array();
      Json items = Json::array();
      size_t n = std::min(a.items.size(), max_items);
      for (size_t i = 0; i < n; ++i) items.push_back(ToJson(a.items[i], max_items));
      if (a.items.size() <= max_items) return items;
      Json o;
      o["type"] = "array";
      o["elem_type"] = std::string(gguf::ValueTypeName(a.elem_type));
      o["count"] = a.items.size();
      o["head"] = std::move(items);
      return o;
    }
    default: return v.AsInt64();
  }
}

// A metadata value as JSON (null when absent).
Json Meta(const GgufFile& f, const std::string& key) {
  const Value* v = f.Find(key);
  return v == nullptr ? Json() : ToJson(*v, kMaxJsonArray);
}

// The value when it is a scalar integer.
std::optional<uint64_t> MetaUint(const GgufFile& f, const std::string& key) {
  auto v = f.GetUint64(key);
  if (!v.ok()) return std::nullopt;
  return *v;
}

// How Weft multiplies by weights of `type`: "x8" (repacked, register-tiled
// SIMD kernels), "simd" (SIMD dot kernels on the file's rows), "dequantize"
// (each row decoded to float first: slow) or "none" (not a weight type).
std::string MatMulPath(GgmlType type) {
  if (kernels::CanPackX8(type)) return "x8";
  if (kernels::MatMulSupports(type)) return "simd";
  if (CanDequantize(type)) return "dequantize";
  return "none";
}

// Tensors by type (count, bytes, matmul path), most bytes first.
Json QuantizationJson(const GgufFile& f) {
  std::map<GgmlType, std::pair<uint64_t, uint64_t>> mix;  // count, bytes
  for (const auto& t : f.tensors()) {
    mix[t.type].first += 1;
    mix[t.type].second += t.nbytes;
  }
  std::vector<std::pair<GgmlType, std::pair<uint64_t, uint64_t>>> sorted(
      mix.begin(), mix.end());
  std::stable_sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) {
    return a.second.second > b.second.second;
  });
  Json q = Json::array();
  for (auto& [type, cb] : sorted) {
    q.push_back({{"type", std::string(TypeName(type))},
                 {"tensors", cb.first},
                 {"bytes", cb.second},
                 {"matmul", MatMulPath(type)}});
  }
  return q;
}

Json MetadataJson(const GgufFile& f) {
  Json meta = Json::object();
  // Appended to the ordered map's vector: its operator[] searches the keys
  // linearly (quadratic in a file's key count), and the reader already
  // refuses duplicate keys.
  auto& entries =
      static_cast<Json::object_t::Container&>(meta.get_ref<Json::object_t&>());
  entries.reserve(f.metadata().size());
  for (const auto& e : f.metadata())
    entries.emplace_back(e.key, ToJson(e.value, kMaxJsonArray));
  return meta;
}

Json TensorsJson(const GgufFile& f) {
  Json ts = Json::array();
  for (const auto& t : f.tensors()) {
    ts.push_back({{"name", t.name},
                  {"type", std::string(TypeName(t.type))},
                  {"shape", t.dims},
                  {"offset", f.data_offset() + t.offset},
                  {"relative_offset", t.offset},
                  {"bytes", t.nbytes}});
  }
  return ts;
}

Json Summarize(const GgufFile& f, bool with_tensors) {
  Json j;
  std::string arch = f.GetString("general.architecture").ok()
                         ? *f.GetString("general.architecture")
                         : "";
  auto k = [&](const char* suffix) { return arch + "." + suffix; };
  j["file"] = f.path();
  j["file_size"] = f.file_size();
  j["gguf_version"] = f.version();
  j["alignment"] = f.alignment();
  j["data_offset"] = f.data_offset();
  j["metadata_count"] = f.metadata().size();
  j["tensor_count"] = f.tensors().size();
  j["architecture"] = Meta(f, "general.architecture");
  j["name"] = Meta(f, "general.name");
  uint64_t params = 0, tensor_bytes = 0;
  for (const auto& t : f.tensors()) {
    params += t.n_elements;
    tensor_bytes += t.nbytes;
  }
  j["parameters"] = params;
  j["tensor_bytes"] = tensor_bytes;
  j["file_type"] = Meta(f, "general.file_type");
  j["quantization"] = QuantizationJson(f);
  j["context_length"] = Meta(f, k("context_length"));
  j["block_count"] = Meta(f, k("block_count"));
  j["head_count"] = Meta(f, k("attention.head_count"));
  j["head_count_kv"] = Meta(f, k("attention.head_count_kv"));
  j["embedding_length"] = Meta(f, k("embedding_length"));
  j["feed_forward_length"] = Meta(f, k("feed_forward_length"));
  // Mixture of experts (null for dense models).
  j["expert_count"] = Meta(f, k("expert_count"));
  j["expert_used_count"] = Meta(f, k("expert_used_count"));
  j["expert_feed_forward_length"] = Meta(f, k("expert_feed_forward_length"));
  Json head_dim = Meta(f, k("attention.key_length"));
  if (head_dim.is_null()) {
    auto embd = MetaUint(f, k("embedding_length"));
    auto heads = MetaUint(f, k("attention.head_count"));
    if (embd && heads && *heads > 0) head_dim = *embd / *heads;
  }
  j["head_dim"] = std::move(head_dim);
  auto tokens = f.GetArray("tokenizer.ggml.tokens");
  j["vocab_size"] = tokens.ok() ? Json((*tokens)->items.size()) : Json();
  j["tokenizer_model"] = Meta(f, "tokenizer.ggml.model");
  j["has_chat_template"] = f.Has("tokenizer.chat_template");
  // Where chat prompts come from: "gguf", or the built-in template the
  // vocabulary supports ("builtin:gemma"), as `weft serve` chooses it.
  StatusOr<tokenizer::Vocab> vocab = tokenizer::LoadVocab(f);
  j["chat_template"] =
      vocab.ok() ? Json(runtime::ChooseChatTemplate(f, *vocab).origin) : Json();
  j["metadata"] = MetadataJson(f);
  if (with_tensors) j["tensors"] = TensorsJson(f);
  return j;
}

Json SystemJson() {
  const CpuFeatures& c = GetCpuFeatures();
  Json j;
  j["arch"] = c.arch;
  j["model_name"] = c.model_name;
  j["logical_cores"] = c.logical_cores;
  j["os_avx"] = c.os_avx;
  j["os_avx512"] = c.os_avx512;
  Json feats = Json::object();
  for (auto& [name, on] : c.All()) feats[name] = on;
  j["features"] = std::move(feats);
  return j;
}

std::string Text(const Json& v) {
  if (v.is_null()) return "-";
  if (v.is_string()) return CEscape(v.get<std::string>(), 200);
  return v.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void PrintText(const Json& j, bool with_tensors) {
  auto row = [](const char* label, const std::string& value) {
    std::printf("%-18s %s\n", label, value.c_str());
  };
  uint64_t size = j["file_size"].get<uint64_t>();
  row("file:", StrFormat("%s (%s, %llu bytes)", Text(j["file"]).c_str(),
                         HumanBytes(static_cast<double>(size)).c_str(),
                         static_cast<unsigned long long>(size)));
  row("gguf version:", StrFormat("%s (alignment %s, %s metadata keys, %s tensors)",
                                 Text(j["gguf_version"]).c_str(),
                                 Text(j["alignment"]).c_str(),
                                 Text(j["metadata_count"]).c_str(),
                                 Text(j["tensor_count"]).c_str()));
  row("architecture:", Text(j["architecture"]));
  row("name:", Text(j["name"]));
  uint64_t params = j["parameters"].get<uint64_t>();
  row("parameters:", StrFormat("%.2f M (%llu)", static_cast<double>(params) / 1e6,
                               static_cast<unsigned long long>(params)));
  row("context length:", Text(j["context_length"]));
  row("layers:", Text(j["block_count"]));
  row("heads:", Text(j["head_count"]));
  row("kv heads:", Text(j["head_count_kv"]));
  row("embedding:", Text(j["embedding_length"]));
  row("ffn:", Text(j["feed_forward_length"]));
  if (!j["expert_count"].is_null()) {
    row("experts:", StrFormat("%s (%s used per token, ffn %s)", Text(j["expert_count"]).c_str(),
                              Text(j["expert_used_count"]).c_str(),
                              Text(j["expert_feed_forward_length"]).c_str()));
  }
  row("head dim:", Text(j["head_dim"]));
  row("vocab size:", Text(j["vocab_size"]));
  row("tokenizer:", Text(j["tokenizer_model"]));
  row("chat template:", Text(j["chat_template"]));
  std::printf("quantization:\n");
  for (const auto& q : j["quantization"]) {
    std::printf("  %-8s %5llu tensors %12s   matmul: %s\n", Text(q["type"]).c_str(),
                static_cast<unsigned long long>(q["tensors"].get<uint64_t>()),
                HumanBytes(q["bytes"].get<double>()).c_str(),
                Text(q["matmul"]).c_str());
  }
  if (!with_tensors) return;
  std::printf("tensors:\n");
  for (const auto& t : j["tensors"]) {
    std::string shape;
    for (const auto& d : t["shape"]) {
      shape += (shape.empty() ? "" : " x ") + std::to_string(d.get<uint64_t>());
    }
    std::printf("  %-40s %-8s %-22s offset %12llu %12llu bytes\n",
                Text(t["name"]).c_str(), Text(t["type"]).c_str(), shape.c_str(),
                static_cast<unsigned long long>(t["offset"].get<uint64_t>()),
                static_cast<unsigned long long>(t["bytes"].get<uint64_t>()));
  }
}

void PrintSystemText(const Json& s) {
  std::printf("%-18s %s\n", "cpu:", Text(s["model_name"]).c_str());
  std::printf("%-18s %s, %d logical cores\n", "arch:", Text(s["arch"]).c_str(),
              s["logical_cores"].get<int>());
  std::string on;
  for (auto& [name, v] : s["features"].items()) {
    if (v.get<bool>()) on += (on.empty() ? "" : " ") + name;
  }
  std::printf("%-18s %s\n", "cpu features:", on.empty() ? "none" : on.c_str());
  std::printf("%-18s avx %s, avx512 %s\n", "os support:",
              s["os_avx"].get<bool>() ? "yes" : "no",
              s["os_avx512"].get<bool>() ? "yes" : "no");
}

int RunInspect(int argc, char** argv) {
  FlagSet flags("weft inspect [--json] [--tensors] [--system] MODEL",
                "Describe a GGUF model file.");
  bool json = false, tensors = false, system = false;
  flags.Bool("json", &json, "print JSON");
  flags.Bool("tensors", &tensors, "list every tensor");
  flags.Bool("system", &system, "print the CPU features this binary detected");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (args.size() > 1 || (args.empty() && !system)) {
    std::fprintf(stderr,
                 "error: want exactly one MODEL\nusage: weft inspect [--json] "
                 "[--tensors] [--system] MODEL (--help for more)\n");
    return 2;
  }
  Json out;
  if (!args.empty()) {
    auto file = GgufFile::Open(args[0]);
    if (!file.ok()) {
      std::fprintf(stderr, "error: %s\n", file.status().message().c_str());
      return 2;
    }
    out = Summarize(**file, tensors);
  }
  if (system) out["system"] = SystemJson();
  if (json) {
    std::printf("%s\n",
                out.dump(2, ' ', false, Json::error_handler_t::replace).c_str());
    return 0;
  }
  if (!args.empty()) PrintText(out, tensors);
  if (system) PrintSystemText(out["system"]);
  return 0;
}

}  // namespace

WEFT_COMMAND("inspect", "describe a GGUF model (--json, --tensors, --system)",
             RunInspect);

}  // namespace weft::apps
