// StreamDetokenizer: turns generated token ids into text one id at a time,
// emitting only complete, valid UTF-8. Bytes of a character spelled by
// several byte-fallback tokens (<0xE2><0x82><0xAC>) are held back until the
// character is complete; bytes that can never form a valid character come
// out as U+FFFD. Concatenating every Push() and the final Flush() gives
// SanitizeUtf8(tokenizer.Decode(ids)), i.e. exactly Decode(ids) whenever
// that is valid UTF-8.
//
// Thread safety: not thread-safe; one instance per sequence. The tokenizer
// must outlive it.
#pragma once

#include <string>

#include "tokenizer/tokenizer.h"

namespace weft::tokenizer {

struct StreamOptions {
  // Render control tokens as their text.
  bool render_special = false;
  // Strip one leading space from the first token, as Decode does for SPM
  // vocabularies with a dummy prefix. Set false when the stream continues
  // an earlier text (e.g. generation after a prompt).
  bool strip_leading_space = true;
};

class StreamDetokenizer {
 public:
  StreamDetokenizer(const Tokenizer& tokenizer, StreamOptions options = {});

  // Returns the text that became complete with `id` (maybe empty). Ids
  // outside the vocabulary add nothing.
  std::string Push(TokenId id);
  // Returns whatever is still held back (an unfinished character, as
  // U+FFFD per byte) and resets the stream.
  std::string Flush();

  // Bytes held back waiting for the rest of a character (at most 3).
  size_t pending_bytes() const { return pending_.size(); }

 private:
  // Moves the valid prefix of pending_ to the result; at end of stream
  // everything goes, invalid bytes as U+FFFD.
  std::string Drain(bool end_of_stream);

  const Tokenizer& tokenizer_;
  StreamOptions options_;
  bool first_ = true;
  std::string pending_;
};

}  // namespace weft::tokenizer
