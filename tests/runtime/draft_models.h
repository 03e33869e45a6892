// Draft models for the draft-proposer tests: stories260K (the target of the
// engine tests) and synthetic llama models written with stories260K's
// vocabulary (or a changed one), as GGUF files in the test's temp dir.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "model/model.h"
#include "tests/model/synthetic.h"

namespace weft::runtime::testing {

inline std::string StoriesPath() {
  return std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
}

// Writes a small random llama whose tokenizer.* keys are stories260K's,
// after `edit_tokens` changed its token texts (may be null), to
// TempDir()/name; returns the path ("" on failure, with a test failure).
inline std::string WriteDraftModel(
    const std::string& name,
    std::function<void(std::vector<std::string>*)> edit_tokens = nullptr,
    uint32_t seed = 7) {
  auto vocab = gguf::GgufFile::Open(StoriesPath());
  if (!vocab.ok()) {
    ADD_FAILURE() << vocab.status().ToString();
    return "";
  }
  std::shared_ptr<const gguf::GgufFile> vf = std::move(*vocab);
  auto tokens = vf->GetStringArray("tokenizer.ggml.tokens");
  if (!tokens.ok()) {
    ADD_FAILURE() << tokens.status().ToString();
    return "";
  }
  model::testing::SyntheticSpec spec;
  spec.arch = "llama";
  spec.n_embd = 32;
  spec.n_layer = 1;
  spec.n_head = 4;
  spec.n_head_kv = 2;
  spec.n_ff = 48;
  spec.n_vocab = static_cast<int64_t>(tokens->size());
  spec.seed = seed;
  std::vector<std::string> texts = *tokens;
  if (edit_tokens) edit_tokens(&texts);
  const bool resized = texts.size() != tokens->size();
  spec.edit = [vf, texts, resized](gguf::GgufWriter& w) {
    for (const gguf::MetadataEntry& e : vf->metadata()) {
      if (e.key.rfind("tokenizer.", 0) != 0) continue;
      // Per-token arrays other than the texts (optional) would no longer
      // match a resized vocabulary.
      if (resized && (e.key == "tokenizer.ggml.scores" ||
                      e.key == "tokenizer.ggml.token_type")) {
        continue;
      }
      w.Set(e.key, e.value);
    }
    w.SetStringArray("tokenizer.ggml.tokens", texts);
  };
  const std::vector<uint8_t> bytes = model::testing::BuildSynthetic(spec);
  const std::string path = ::testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr ||
      std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) {
    ADD_FAILURE() << "cannot write " << path;
    if (f != nullptr) std::fclose(f);
    return "";
  }
  std::fclose(f);
  return path;
}

// Loads a model file as the draft proposer takes it; null (with a test
// failure) when it does not load.
inline std::shared_ptr<const model::Model> LoadShared(const std::string& path) {
  auto m = model::Model::Load(path);
  if (!m.ok()) {
    ADD_FAILURE() << m.status().ToString();
    return nullptr;
  }
  return std::shared_ptr<const model::Model>(std::move(*m));
}

}  // namespace weft::runtime::testing
