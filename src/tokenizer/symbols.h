// The symbol list that BPE (bpe.cc) and SentencePiece (spm.cc) merge, as
// llama.cpp's tokenizers do: a text's byte runs in a doubly linked list,
// adjacent pairs merged best first until none is left to merge.
#pragma once

#include <cstdint>
#include <vector>

#include "tokenizer/vocab.h"

namespace weft::tokenizer {

struct Symbol {
  int prev;
  int next;
  uint32_t start;         // byte offset into the text
  uint32_t n;             // bytes; 0 once merged into the left neighbour
  TokenId id = kNoToken;  // BPE: the token of the symbol's text, if any
};

// Merges the right neighbour of symbols[left] into it: its bytes and its
// place in the list (the neighbour keeps n = 0, so queued pairs that name
// it are seen to be stale).
inline void MergeWithNext(std::vector<Symbol>& symbols, int left) {
  Symbol& l = symbols[static_cast<size_t>(left)];
  Symbol& r = symbols[static_cast<size_t>(l.next)];
  l.n += r.n;
  r.n = 0;
  l.next = r.next;
  if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = left;
}

}  // namespace weft::tokenizer
