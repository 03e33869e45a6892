// SequenceText: the text side of one generated sequence. Turns token ids
// into text with a StreamDetokenizer (generation continues the prompt, so
// the SPM leading-space rule is never applied) and applies stop strings
// across token boundaries: text that could still be the start of a stop
// string is held back, and nothing from a matched stop string on is ever
// released.
//
// Thread safety: not thread-safe; one instance per sequence. The tokenizer
// must outlive it.
// Invariants: released() <= the decoded text so far; once stopped(), no
// more text is released.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace weft::server {

class SequenceText {
 public:
  // render_special: control tokens' text is kept (Push them only if wanted).
  SequenceText(const tokenizer::Tokenizer& tokenizer,
               std::vector<std::string> stop_strings, bool render_special = false);

  // Adds a token; returns the text that became safe to show (maybe empty).
  // After a stop string matched, returns "" and stopped() is true.
  std::string Push(tokenizer::TokenId id);
  // End of the sequence: returns everything still held back (an unfinished
  // character as U+FFFD), cut at a stop string if the tail completes one.
  std::string Finish();

  // Whether a stop string matched (the text released ends before it).
  bool stopped() const { return stopped_; }
  // The stop string that matched (empty until stopped()).
  const std::string& matched() const { return matched_; }
  // Bytes of text released so far.
  size_t released() const { return released_; }

 private:
  // Releases text_[released_, end) and returns it.
  std::string Release(size_t end);
  // Looks for a stop string starting at or after released_; on a match,
  // releases the text before it and sets stopped_.
  bool CheckStop(std::string* out);

  tokenizer::StreamDetokenizer detok_;
  std::vector<std::string> stops_;  // non-empty strings only
  std::string text_;                // all decoded text
  size_t released_ = 0;
  bool stopped_ = false;
  std::string matched_;             // the stop string that matched
};

}  // namespace weft::server
