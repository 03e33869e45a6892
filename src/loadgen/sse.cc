#include "loadgen/sse.h"

namespace weft::loadgen {

void SseParser::Feed(std::string_view bytes, std::vector<SseEvent>* out) {
  bytes_fed_ += bytes.size();
  for (char c : bytes) {
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // "\r\n" split across reads
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      Line(line_, out);
      line_.clear();
    } else {
      line_.push_back(c);
    }
  }
}

void SseParser::Finish(std::vector<SseEvent>* out) {
  if (!line_.empty()) {
    Line(line_, out);
    line_.clear();
  }
  Dispatch(out);
}

void SseParser::Line(std::string_view line, std::vector<SseEvent>* out) {
  if (line.empty()) return Dispatch(out);
  if (line[0] == ':') return;  // comment / keep-alive
  std::string_view field = line;
  std::string_view value;
  if (size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) pending_.data.push_back('\n');
    pending_.data.append(value);
    has_data_ = true;
  } else if (field == "event") {
    pending_.event.assign(value);
  }
  // "id", "retry" and unknown fields are ignored.
}

void SseParser::Dispatch(std::vector<SseEvent>* out) {
  if (has_data_) {
    pending_.done = pending_.data == "[DONE]";
    out->push_back(std::move(pending_));
  }
  pending_ = SseEvent();
  has_data_ = false;
}

}  // namespace weft::loadgen
