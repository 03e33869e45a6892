// Regex pre-tokenizer for byte-level BPE vocabularies: splits text into
// words with the patterns llama.cpp uses for each tokenizer.ggml.pre value
// (gpt-2, llama3/llama-bpe, qwen2, default, ...), evaluated with PCRE2 in
// UTF + UCP mode (\p{L}, \p{N}, \s are Unicode-aware).
//
// Each pattern refines the pieces produced by the previous one: inside a
// piece, every match and every unmatched gap becomes a piece of its own.
//
// Thread safety: immutable after Create(); Split() may be called from many
// threads at once (match data is per call).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace weft::tokenizer {

class PreTokenizer {
 public:
  // Byte ranges [begin, end) of the words of a text.
  using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

  // Unimplemented for pre-tokenizer names Weft does not know.
  static StatusOr<std::unique_ptr<PreTokenizer>> Create(std::string_view pre);
  // From explicit patterns (tests).
  static StatusOr<std::unique_ptr<PreTokenizer>> FromPatterns(
      const std::vector<std::string>& patterns);
  ~PreTokenizer();

  // Splits `text`, which must be valid UTF-8 without surrogates (see
  // NormalizeUtf8Lenient), into consecutive non-empty word ranges that
  // cover it.
  Ranges Split(std::string_view text) const;

 private:
  struct Regex;
  PreTokenizer() = default;
  std::vector<std::unique_ptr<Regex>> regexes_;
};

}  // namespace weft::tokenizer
