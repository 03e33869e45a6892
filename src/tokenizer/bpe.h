// Byte-level BPE ("gpt2" vocabularies), matching llama.cpp's
// llm_tokenizer_bpe: text is split into words by the PreTokenizer, every
// byte maps to one GPT-2 character, and within each word the adjacent pair
// with the lowest merge rank is merged repeatedly (priority queue + linked
// list, O(n log n) per word).
//
// Merges are looked up by the token ids of both sides, so the merge loop
// does no string work.
//
// Thread safety: immutable after Create(); Encode() is reentrant.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"
#include "util/status.h"

namespace weft::tokenizer {

class BpeEncoder {
 public:
  // `vocab` must outlive the encoder.
  static StatusOr<std::unique_ptr<BpeEncoder>> Create(const Vocab& vocab);

  // Appends the tokens of `text` (arbitrary bytes; invalid UTF-8 is read
  // as U+FFFD like llama.cpp does) to `out`.
  void Encode(std::string_view text, std::vector<TokenId>* out) const;

 private:
  struct Merge {
    int32_t rank;
    TokenId result;  // kNoToken if the merged text is not a token
  };
  explicit BpeEncoder(const Vocab& vocab) : vocab_(vocab) {}
  void EncodeWord(std::string_view word, std::vector<TokenId>* out) const;
  static uint64_t Key(TokenId a, TokenId b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) |
           static_cast<uint32_t>(b);
  }

  const Vocab& vocab_;
  std::unique_ptr<PreTokenizer> pre_;
  std::unordered_map<uint64_t, Merge> merges_;  // (left id, right id) -> merge
};

}  // namespace weft::tokenizer
