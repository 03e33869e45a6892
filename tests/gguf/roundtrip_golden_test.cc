// Byte-exact round trip of the default model (Gemma 3 270M, 253 MB):
// Open -> CopyFrom -> Serialize must equal the original bytes. Label golden.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace weft::gguf {
namespace {

void ExpectRoundTrip(const std::string& path) {
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  GgufWriter w;
  ASSERT_TRUE(w.CopyFrom(**f).ok());
  auto out = w.Serialize();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  std::span<const uint8_t> in = (*f)->bytes();
  ASSERT_EQ(out->size(), in.size());
  auto mismatch = std::mismatch(out->begin(), out->end(), in.begin());
  EXPECT_TRUE(mismatch.first == out->end())
      << "first difference at byte " << (mismatch.first - out->begin());
}

TEST(GgufRoundTripGolden, DefaultModel) {
  ExpectRoundTrip(WEFT_DEFAULT_MODEL);
  auto f = GgufFile::Open(WEFT_DEFAULT_MODEL);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "gemma3");
  EXPECT_EQ((*f)->GetArray("tokenizer.ggml.tokens").value()->items.size(),
            262144u);
}

}  // namespace
}  // namespace weft::gguf
