#include "util/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace weft {
namespace {
std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
}

void SetMinLogLevel(LogLevel level) {
  g_min_level.store(static_cast<int>(level));
}
LogLevel MinLogLevel() { return static_cast<LogLevel>(g_min_level.load()); }

namespace internal {

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  static const char kLetters[] = {'D', 'I', 'W', 'E'};
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          now.time_since_epoch()).count() % 1000);
  std::tm tm;
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%H:%M:%S", &tm);
  (void)file;
  (void)line;
  os_ << kLetters[static_cast<int>(level)] << " " << buf << "."
      << (ms < 100 ? (ms < 10 ? "00" : "0") : "") << ms << " ";
}

LogLine::~LogLine() {
  os_ << "\n";
  std::string s = os_.str();
  std::fwrite(s.data(), 1, s.size(), stderr);
  (void)level_;
}

}  // namespace internal
}  // namespace weft
