#include "util/file_hash.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace weft {
namespace {

std::string WriteTemp(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// FIPS 180-2 appendix B vectors, and the empty message.
TEST(Sha256FileTest, KnownVectors) {
  EXPECT_EQ(Sha256File(WriteTemp("empty", "")).value(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256File(WriteTemp("abc", "abc")).value(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      Sha256File(WriteTemp("million_a", std::string(1000000, 'a'))).value(),
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Several 1 MiB chunks and a partial one: the same as coreutils says.
TEST(Sha256FileTest, MatchesSha256sumAcrossChunks) {
  std::string bytes((size_t{5} << 19) + 17, '\0');  // 2.5 MiB + 17
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = static_cast<char>(i * 131 + (i >> 9));
  const std::string path = WriteTemp("chunks", bytes);
  FILE* p = popen(("sha256sum '" + path + "'").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char want[65] = {};
  ASSERT_EQ(std::fread(want, 1, 64, p), 64u);
  pclose(p);
  EXPECT_EQ(Sha256File(path).value(), std::string(want));
}

TEST(Sha256FileTest, MissingFileAndCancel) {
  StatusOr<std::string> missing = Sha256File("/nonexistent/weft-model.gguf");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  const std::atomic<bool> cancel{true};
  StatusOr<std::string> c = Sha256File(WriteTemp("c", "abc"), &cancel);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kAborted);
}

}  // namespace
}  // namespace weft
