// SentencePiece-style BPE ("llama" vocabularies), matching llama.cpp's
// llm_tokenizer_spm: the text is split into UTF-8 characters, then the
// adjacent pair whose concatenation is the highest-scoring token is merged
// repeatedly (priority queue + linked list of symbols, O(n log n)).
// Symbols that are not tokens are emitted as <0xNN> byte tokens.
//
// Thread safety: stateless; any number of concurrent calls.
#pragma once

#include <string_view>
#include <vector>

#include "tokenizer/vocab.h"

namespace weft::tokenizer {

// Appends the tokens of `text` to `out`. `text` must already have spaces
// escaped as "▁" (and the dummy prefix added if wanted).
// REQUIRES: text.size() < 2^31.
void SpmEncode(const Vocab& vocab, std::string_view text,
               std::vector<TokenId>* out);

}  // namespace weft::tokenizer
