#include "tokenizer/bpe.h"

#include <queue>
#include <string>

#include "tokenizer/symbols.h"
#include "tokenizer/unicode.h"

namespace weft::tokenizer {

namespace {

struct Bigram {
  int left;
  int right;
  int32_t rank;
  uint32_t left_n;   // sizes when queued, to detect stale pairs
  uint32_t right_n;
  TokenId result;
};

// Lowest rank first; on ties the leftmost pair (llama.cpp's order).
struct BigramLess {
  bool operator()(const Bigram& l, const Bigram& r) const {
    return l.rank > r.rank || (l.rank == r.rank && l.left > r.left);
  }
};

}  // namespace

StatusOr<std::unique_ptr<BpeEncoder>> BpeEncoder::Create(const Vocab& vocab) {
  std::unique_ptr<BpeEncoder> enc(new BpeEncoder(vocab));
  ASSIGN_OR_RETURN(enc->pre_, PreTokenizer::Create(vocab.pre));
  enc->merges_.reserve(vocab.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
    const auto& [left, right] = vocab.merges[rank];
    const TokenId l = vocab.Find(left);
    const TokenId r = vocab.Find(right);
    if (l == kNoToken || r == kNoToken) continue;  // can never apply
    joined.assign(left).append(right);
    // The first (lowest) rank of a pair wins, as with emplace in llama.cpp.
    enc->merges_.emplace(Key(l, r), Merge{static_cast<int32_t>(rank), vocab.Find(joined)});
  }
  return enc;
}

void BpeEncoder::Encode(std::string_view text, std::vector<TokenId>* out) const {
  const std::string normalized = NormalizeUtf8Lenient(text);
  for (const auto& [begin, end] : pre_->Split(normalized)) {
    EncodeWord(std::string_view(normalized).substr(begin, end - begin), out);
  }
}

void BpeEncoder::EncodeWord(std::string_view word, std::vector<TokenId>* out) const {
  if (word.empty()) return;
  if (vocab_.ignore_merges) {
    std::string encoded;
    for (char c : word) encoded.append(ByteToUnicode(static_cast<uint8_t>(c)));
    const TokenId id = vocab_.Find(encoded);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  // One symbol per byte: each byte is one GPT-2 character.
  std::vector<Symbol> symbols(word.size());
  const int n = static_cast<int>(word.size());
  for (int i = 0; i < n; ++i) {
    symbols[i] = Symbol{i - 1, i + 1 == n ? -1 : i + 1, static_cast<uint32_t>(i), 1,
                        vocab_.byte_tokens[static_cast<uint8_t>(word[i])]};
  }
  std::priority_queue<Bigram, std::vector<Bigram>, BigramLess> queue;
  const auto try_add = [&](int left, int right) {
    if (left == -1 || right == -1) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    if (l.id == kNoToken || r.id == kNoToken) return;
    auto it = merges_.find(Key(l.id, r.id));
    if (it == merges_.end()) return;
    queue.push(Bigram{left, right, it->second.rank, l.n, r.n, it->second.result});
  };
  for (int i = 1; i < n; ++i) try_add(i - 1, i);

  while (!queue.empty()) {
    const Bigram b = queue.top();
    queue.pop();
    Symbol& left = symbols[b.left];
    Symbol& right = symbols[b.right];
    if (left.n == 0 || right.n == 0 || left.n != b.left_n || right.n != b.right_n) {
      continue;  // stale
    }
    MergeWithNext(symbols, b.left);
    left.id = b.result;
    try_add(left.prev, b.left);
    try_add(b.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const Symbol& sym = symbols[i];
    if (sym.id != kNoToken) {
      out->push_back(sym.id);
      continue;
    }
    // llama.cpp looks each byte of the mapped text up as a one-byte token,
    // which only ever finds printable ASCII.
    for (char c : word.substr(sym.start, sym.n)) {
      const std::string_view mapped = ByteToUnicode(static_cast<uint8_t>(c));
      if (mapped.size() != 1) continue;
      const TokenId id = vocab_.Find(mapped);
      if (id != kNoToken) out->push_back(id);
    }
  }
}

}  // namespace weft::tokenizer
