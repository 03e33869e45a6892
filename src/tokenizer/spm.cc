#include "tokenizer/spm.h"

#include <algorithm>
#include <queue>

#include "tokenizer/symbols.h"
#include "tokenizer/unicode.h"
#include "util/check.h"

namespace weft::tokenizer {

namespace {

struct Bigram {
  int left;
  int right;
  float score;
  uint32_t size;
};

// Highest score first; on ties the leftmost pair (llama.cpp's order).
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.score < r.score || (l.score == r.score && l.left > r.left);
  }
};

class Session {
 public:
  Session(const Vocab& vocab, std::string_view text) : vocab_(vocab), text_(text) {}

  void Run(std::vector<TokenId>* out) {
    // Split into UTF-8 characters (a truncated last character is kept whole).
    symbols_.reserve(text_.size());
    size_t offs = 0;
    int index = 0;
    while (offs < text_.size()) {
      const size_t len = std::min(Utf8LenFromLead(static_cast<uint8_t>(text_[offs])),
                                  text_.size() - offs);
      Symbol sym;
      sym.start = static_cast<uint32_t>(offs);
      sym.n = static_cast<uint32_t>(len);
      offs += len;
      sym.prev = index - 1;
      sym.next = offs == text_.size() ? -1 : index + 1;
      ++index;
      symbols_.push_back(sym);
    }
    if (symbols_.empty()) return;
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Skip pairs that went stale because a side was merged meanwhile.
      if (left.n == 0 || right.n == 0 || left.n + right.n != bigram.size) continue;
      MergeWithNext(symbols_, bigram.left);
      TryAddBigram(left.prev, bigram.left);
      TryAddBigram(bigram.left, left.next);
    }

    for (int i = 0; i != -1; i = symbols_[i].next) {
      const Symbol& sym = symbols_[i];
      const std::string_view piece = text_.substr(sym.start, sym.n);
      const TokenId id = vocab_.Find(piece);
      if (id != kNoToken) {
        out->push_back(id);
        continue;
      }
      // Not a token (merged symbols always are): fall back to bytes.
      for (char c : piece) {
        TokenId b = vocab_.byte_tokens[static_cast<uint8_t>(c)];
        if (b == kNoToken) b = vocab_.unk;
        if (b != kNoToken) out->push_back(b);
      }
    }
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left == -1 || right == -1) return;
    const uint32_t size = symbols_[left].n + symbols_[right].n;
    const TokenId id = vocab_.Find(text_.substr(symbols_[left].start, size));
    if (id == kNoToken) return;
    queue_.push(Bigram{left, right, vocab_.scores[id], size});
  }

  const Vocab& vocab_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue_;
};

}  // namespace

void SpmEncode(const Vocab& vocab, std::string_view text, std::vector<TokenId>* out) {
  CHECK_LT(text.size(), static_cast<size_t>(INT32_MAX));
  Session(vocab, text).Run(out);
}

}  // namespace weft::tokenizer
