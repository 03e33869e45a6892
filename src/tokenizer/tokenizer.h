// Tokenizer: text <-> token ids for a GGUF vocabulary, following llama.cpp
// (llama_tokenize / llama_detokenize) so ids match what llama.cpp feeds the
// model. Supports "llama" (SentencePiece BPE, spm.h) and "gpt2" (byte-level
// BPE, bpe.h) vocabularies.
//
// Special tokens: text is first cut at the spelled-out special tokens,
// longest first. User-defined tokens (token_type 4, e.g. Gemma's "\n\n" or
// "<table>") are always cut out, as llama.cpp and HF tokenizers do; control
// and unknown tokens ("<bos>", "<start_of_turn>") only when the caller sets
// parse_special, so user text can never smuggle them in.
//
// Usage:
//   ASSIGN_OR_RETURN(auto file, gguf::GgufFile::Open(path));
//   ASSIGN_OR_RETURN(auto tok, Tokenizer::FromGguf(*file));
//   ASSIGN_OR_RETURN(auto ids, tok->Encode("Hello", {.add_special = true}));
//   ASSIGN_OR_RETURN(std::string text, tok->Decode(ids));
//
// Thread safety: immutable after creation; all methods are const and may be
// called concurrently.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/bpe.h"
#include "tokenizer/vocab.h"
#include "util/status.h"

namespace weft::gguf {
class GgufFile;
}

namespace weft::tokenizer {

struct EncodeOptions {
  // Add BOS / EOS where the vocabulary asks for them (add_bos_token,
  // add_eos_token).
  bool add_special = true;
  // Recognise the text of control tokens ("<start_of_turn>") as those
  // tokens. Off for untrusted text.
  bool parse_special = false;
};

struct DecodeOptions {
  // Drop a leading BOS / trailing EOS that the vocabulary adds itself.
  bool remove_special = false;
  // Render control and unknown tokens as their text instead of nothing.
  bool render_special = false;
};

class Tokenizer {
 public:
  // Inputs larger than this are rejected with InvalidArgument.
  static constexpr size_t kMaxInputBytes = size_t{256} << 20;

  static StatusOr<std::unique_ptr<Tokenizer>> Create(Vocab vocab);
  static StatusOr<std::unique_ptr<Tokenizer>> FromGguf(const gguf::GgufFile& file);

  const Vocab& vocab() const { return vocab_; }
  int32_t n_tokens() const { return vocab_.size(); }

  StatusOr<std::vector<TokenId>> Encode(std::string_view text,
                                        const EncodeOptions& options = {}) const;

  // InvalidArgument for ids outside the vocabulary. The result is raw
  // bytes: it may be invalid UTF-8 if the ids split a character.
  StatusOr<std::string> Decode(std::span<const TokenId> ids,
                               const DecodeOptions& options = {}) const;

  // The bytes one token stands for (no leading-space stripping); empty for
  // control/unknown tokens unless `render_special`, and for invalid ids.
  std::string_view TokenToPiece(TokenId id, bool render_special = false) const;

  // Decode's rule: strip one leading space from the first piece.
  bool strips_leading_space() const { return vocab_.add_space_prefix; }

  // InvalidArgument when the vocabulary has more tokens than a model with
  // `model_rows` embedding rows can take (its ids would index past them).
  Status CheckFitsModel(int64_t model_rows) const;

 private:
  struct Fragment {
    TokenId token;  // kNoToken for raw text
    uint32_t begin;
    uint32_t end;
  };
  // Special tokens of one text length. Candidates are filtered by their
  // first two bytes before the vocabulary lookup.
  struct SpecialClass {
    size_t len = 0;
    std::vector<bool> prefix_any;   // [65536]: (b0 << 8 | b1) of any token
    std::vector<bool> prefix_user;  // same, always-matched tokens only
    bool has_user = false;
  };

  explicit Tokenizer(Vocab vocab) : vocab_(std::move(vocab)) {}
  Status Init();
  std::vector<Fragment> Partition(std::string_view text, bool parse_special) const;

  Vocab vocab_;
  std::unique_ptr<BpeEncoder> bpe_;       // gpt2 vocabularies only
  std::vector<std::string> pieces_;       // id -> rendered bytes
  std::vector<SpecialClass> specials_;    // by length, longest first
};

}  // namespace weft::tokenizer
