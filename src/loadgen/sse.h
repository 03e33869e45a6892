// Incremental parser of a text/event-stream body (the WHATWG SSE format):
// bytes go in as they arrive, split anywhere (even inside "\r\n"); complete
// events come out.
//
// Thread safety: none (one parser per stream). Invariant: `line_` holds the
// bytes of the current, not yet terminated line.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace weft::loadgen {

struct SseEvent {
  std::string event;  // "event:" field; empty = "message"
  std::string data;   // "data:" lines joined by "\n"
  bool done = false;  // data == "[DONE]" (the OpenAI end marker)
};

class SseParser {
 public:
  // Parses `bytes` and appends every event completed by them to `out`.
  void Feed(std::string_view bytes, std::vector<SseEvent>* out);
  // End of the body: an event without its final blank line is still
  // delivered (as browsers do not, but servers that forget it exist).
  void Finish(std::vector<SseEvent>* out);
  // Bytes seen that were not part of any field line (for diagnostics).
  size_t bytes_fed() const { return bytes_fed_; }

 private:
  void Line(std::string_view line, std::vector<SseEvent>* out);
  void Dispatch(std::vector<SseEvent>* out);

  std::string line_;
  bool after_cr_ = false;  // last byte was '\r' (a following '\n' is eaten)
  bool has_data_ = false;
  SseEvent pending_;
  size_t bytes_fed_ = 0;
};

}  // namespace weft::loadgen
