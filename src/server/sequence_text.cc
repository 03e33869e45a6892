#include "server/sequence_text.h"

#include <algorithm>
#include <string_view>

namespace weft::server {

SequenceText::SequenceText(const tokenizer::Tokenizer& tokenizer,
                           std::vector<std::string> stop_strings, bool render_special)
    : detok_(tokenizer, {.render_special = render_special,
                         .strip_leading_space = false}) {
  for (std::string& s : stop_strings) {
    if (!s.empty()) stops_.push_back(std::move(s));
  }
}

std::string SequenceText::Release(size_t end) {
  if (end <= released_) return "";
  std::string out = text_.substr(released_, end - released_);
  released_ = end;
  return out;
}

bool SequenceText::CheckStop(std::string* out) {
  size_t cut = std::string::npos;
  const std::string* first = nullptr;
  for (const std::string& s : stops_) {
    size_t pos = text_.find(s, released_);
    if (pos != std::string::npos && pos < cut) {
      cut = pos;
      first = &s;
    }
  }
  if (cut == std::string::npos) return false;
  *out += Release(cut);
  stopped_ = true;
  matched_ = *first;
  return true;
}

std::string SequenceText::Push(tokenizer::TokenId id) {
  if (stopped_) return "";
  text_ += detok_.Push(id);
  std::string out;
  if (CheckStop(&out)) return out;
  // Hold back the longest tail that is a proper prefix of a stop string.
  const std::string_view pending =
      std::string_view(text_).substr(released_);
  size_t hold = 0;
  for (const std::string& s : stops_) {
    const size_t most = std::min(s.size() - 1, pending.size());
    for (size_t k = most; k > hold; --k) {
      if (pending.substr(pending.size() - k) ==
          std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  return Release(text_.size() - hold);
}

std::string SequenceText::Finish() {
  if (stopped_) return "";
  text_ += detok_.Flush();
  std::string out;
  if (CheckStop(&out)) return out;
  return Release(text_.size());
}

}  // namespace weft::server
