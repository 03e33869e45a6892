#include "server/file_hasher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

namespace weft::server {
namespace {

std::string WriteTemp(const std::string& name, size_t bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream f(path, std::ios::binary);
  const std::string chunk(1 << 16, 'a');
  for (size_t done = 0; done < bytes; done += chunk.size()) {
    f.write(chunk.data(),
            static_cast<std::streamsize>(std::min(chunk.size(), bytes - done)));
  }
  return path;
}

TEST(FileHasherTest, ReportsTheDigestOnceComputed) {
  FileHasher h(WriteTemp("abc1m", 1000000));
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!h.result() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // One million 'a' (FIPS 180-2 appendix B.3).
  EXPECT_EQ(h.result().value_or("none"),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(FileHasherTest, UnreadableFileStaysUnknown) {
  FileHasher h("/nonexistent/model.gguf");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(h.result().has_value());
}

// Destroyed while hashing (a large file, a fresh hasher): the thread stops
// at the next chunk and joins; nothing leaks (ASan) or hangs.
TEST(FileHasherTest, DestroyedWhileHashing) {
  const std::string path = WriteTemp("big", size_t{64} << 20);
  for (int i = 0; i < 3; ++i) {
    FileHasher h(path);
  }
}

}  // namespace
}  // namespace weft::server
