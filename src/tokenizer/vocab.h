// Vocab: the tokenizer data of a model, as carried by GGUF metadata
// (tokenizer.ggml.*): token texts, scores, types, BPE merges, special token
// ids and flags. Plain data plus a text -> id index; the algorithms live in
// spm.h, bpe.h and tokenizer.h.
//
// Thread safety: immutable after LoadVocab()/FinalizeVocab(); share freely.
// Invariants (after FinalizeVocab): tokens, scores and attrs have the same
// size; token texts are unique and non-empty; every special id is either
// kNoToken or a valid id; `index` maps every token text to its id.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "util/status.h"

namespace weft::gguf {
class GgufFile;
}

namespace weft::tokenizer {

using TokenId = int32_t;
inline constexpr TokenId kNoToken = -1;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  kUndefined = 0,
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

// Per-token attribute bits (llama.cpp's llama_token_attr).
enum TokenAttr : uint32_t {
  kAttrUndefined = 0,
  kAttrUnknown = 1u << 0,
  kAttrUnused = 1u << 1,
  kAttrNormal = 1u << 2,
  kAttrControl = 1u << 3,
  kAttrUserDefined = 1u << 4,
  kAttrByte = 1u << 5,
  kAttrLstrip = 1u << 7,  // eat whitespace left of the token when matching
  kAttrRstrip = 1u << 8,  // eat whitespace right of the token when matching
};

enum class VocabKind {
  kLlama,  // "llama": SentencePiece-style BPE by score, byte fallback
  kGpt2,   // "gpt2": byte-level BPE by merge rank with regex pre-splitting
};

// Fast 64-bit hash of short strings (token texts).
uint64_t HashText(std::string_view s);

// text -> id over a vocabulary's own token storage: open addressing with
// linear probing; each slot keeps the id and 32 bits of the hash, so a
// lookup touches one cache line and compares at most one string in the
// common case. Movable and copyable (it stores ids, not pointers).
class TokenIndex {
 public:
  // Indexes `tokens`; returns the first duplicate's id, or kNoToken.
  TokenId Build(const std::vector<std::string>& tokens);
  TokenId Find(const std::vector<std::string>& tokens, std::string_view text) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint32_t hash = 0;
    TokenId id = kNoToken;
  };
  std::vector<Slot> slots_;  // power-of-two size, at most half full
  size_t size_ = 0;
};

struct Vocab {
  VocabKind kind = VocabKind::kLlama;
  std::string model;  // tokenizer.ggml.model as written ("llama", "gpt2")
  std::string pre;    // tokenizer.ggml.pre ("" when absent)

  std::vector<std::string> tokens;  // id -> text ("▁" for spaces in SPM)
  std::vector<float> scores;        // id -> score (0 when absent)
  std::vector<uint32_t> attrs;      // id -> TokenAttr bits
  // BPE merges in rank order: (left, right) token texts.
  std::vector<std::pair<std::string, std::string>> merges;

  // Special token ids (kNoToken when the model has none).
  TokenId bos = kNoToken;   // beginning of sequence
  TokenId eos = kNoToken;   // end of sequence
  TokenId eot = kNoToken;   // end of turn ("<end_of_turn>", "<|eot_id|>")
  TokenId eom = kNoToken;   // end of message ("<|eom_id|>")
  TokenId unk = kNoToken;   // unknown
  TokenId sep = kNoToken;   // separator
  TokenId pad = kNoToken;   // padding
  TokenId mask = kNoToken;  // mask
  std::vector<TokenId> eog_ids;  // every token that ends generation (sorted)

  bool add_bos = false;           // Encode(add_special) prepends bos
  bool add_eos = false;           // Encode(add_special) appends eos
  bool add_sep = false;           // (BERT-style; recorded, unused here)
  bool add_space_prefix = false;  // SPM: prefix " " to text after specials
  bool ignore_merges = false;     // BPE: a whole word that is a token wins
  bool clean_spaces = false;      // HF clean-up flag (recorded; Decode keeps spaces)

  // text -> id. Built by FinalizeVocab().
  TokenIndex index;
  // byte -> token: "<0xNN>" for SPM, the GPT-2 mapped character for BPE;
  // kNoToken where the vocab has none.
  std::vector<TokenId> byte_tokens;

  int32_t size() const { return static_cast<int32_t>(tokens.size()); }
  bool Valid(TokenId id) const { return id >= 0 && id < size(); }
  // kNoToken when `text` is not a token.
  TokenId Find(std::string_view text) const {
    return index.Find(tokens, text);
  }
  bool HasAttr(TokenId id, uint32_t attr) const {
    return Valid(id) && (attrs[id] & attr) != 0;
  }
  bool IsEog(TokenId id) const;
};

// Maps a tokenizer.ggml.token_type value to attribute bits.
uint32_t AttrFromTokenType(int32_t type);

// Validates the vocab and builds `index` and `byte_tokens`. Fills
// missing scores/attrs (0 / normal). Fails on duplicate texts, bad special
// ids or mismatched array sizes. Empty texts become "[EMPTY_<id>]" as in
// llama.cpp.
Status FinalizeVocab(Vocab* vocab);

// Reads tokenizer.ggml.* from `file` with llama.cpp's defaults:
// SPM: bos=1 eos=2 unk=0, add_bos, add_space_prefix; BPE: add_bos only for
// llama3-style pre-tokenizers. Auto-detects eot/eog tokens by text and
// marks control tokens named "unused" as unused.
StatusOr<Vocab> LoadVocab(const gguf::GgufFile& file);

}  // namespace weft::tokenizer
