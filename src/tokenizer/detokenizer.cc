#include "tokenizer/detokenizer.h"

#include "tokenizer/unicode.h"

namespace weft::tokenizer {

StreamDetokenizer::StreamDetokenizer(const Tokenizer& tokenizer, StreamOptions options)
    : tokenizer_(tokenizer), options_(options) {}

std::string StreamDetokenizer::Push(TokenId id) {
  std::string_view piece = tokenizer_.TokenToPiece(id, options_.render_special);
  if (first_) {
    // Decode consumes the strip on the first token even if it renders empty.
    if (options_.strip_leading_space && tokenizer_.strips_leading_space() &&
        !piece.empty() && piece.front() == ' ') {
      piece.remove_prefix(1);
    }
    first_ = false;
  }
  pending_.append(piece);
  return Drain(false);
}

std::string StreamDetokenizer::Flush() {
  std::string out = Drain(true);
  first_ = true;
  return out;
}

std::string StreamDetokenizer::Drain(bool end_of_stream) {
  std::string out;
  size_t pos = 0;
  while (pos < pending_.size()) {
    const int n = ValidUtf8SeqLen(pending_, pos);
    if (n > 0) {
      out.append(pending_, pos, n);
      pos += n;
    } else if (n < 0 && !end_of_stream) {
      break;  // an unfinished character: wait for more bytes
    } else {
      AppendUtf8(kReplacementChar, &out);
      ++pos;
    }
  }
  pending_.erase(0, pos);
  return out;
}

}  // namespace weft::tokenizer
