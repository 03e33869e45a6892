// Minimal leveled logging to stderr: LOG(INFO) << "..."; one line per call.
// Thread safety: each line is written with a single fwrite.
#pragma once

#include <sstream>

namespace weft {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Messages below this level are dropped. Set once at start-up (apps/).
void SetMinLogLevel(LogLevel level);
LogLevel MinLogLevel();

namespace internal {
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  std::ostream& stream() { return os_; }

 private:
  LogLevel level_;
  std::ostringstream os_;
};
}  // namespace internal

}  // namespace weft

#define WEFT_LOG_DEBUG ::weft::LogLevel::kDebug
#define WEFT_LOG_INFO ::weft::LogLevel::kInfo
#define WEFT_LOG_WARNING ::weft::LogLevel::kWarning
#define WEFT_LOG_ERROR ::weft::LogLevel::kError
#define LOG(level)                                           \
  if (WEFT_LOG_##level < ::weft::MinLogLevel()) {            \
  } else                                                     \
    ::weft::internal::LogLine(WEFT_LOG_##level, __FILE__, __LINE__).stream()
