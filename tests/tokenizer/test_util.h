// Helpers shared by the tokenizer tests.
#pragma once

#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "util/strings.h"

namespace weft::tokenizer::testing {

inline std::string SharedPath(const std::string& name) {
  return std::string(WEFT_SHARED_MODELS_DIR) + "/" + name;
}

inline bool FileExists(const std::string& path) {
  std::ifstream f(path);
  return f.good();
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Loads a tokenizer from a GGUF file; null (with a test failure) on error.
inline std::unique_ptr<Tokenizer> LoadTokenizer(const std::string& path) {
  auto file = gguf::GgufFile::Open(path);
  if (!file.ok()) {
    ADD_FAILURE() << file.status().ToString();
    return nullptr;
  }
  auto tok = Tokenizer::FromGguf(**file);
  if (!tok.ok()) {
    ADD_FAILURE() << tok.status().ToString();
    return nullptr;
  }
  return std::move(tok).value();
}

inline std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

}  // namespace weft::tokenizer::testing
