// Byte-exact round trip of the default model (Gemma 3 270M, 253 MB):
// Open -> CopyFrom -> Serialize must equal the original bytes. Label golden.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "tests/gguf/roundtrip.h"

namespace weft::gguf {
namespace {

TEST(GgufRoundTripGolden, DefaultModel) {
  ExpectRoundTrip(WEFT_GEMMA_MODEL);
  auto f = GgufFile::Open(WEFT_GEMMA_MODEL);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(*(*f)->GetString("general.architecture"), "gemma3");
  EXPECT_EQ((*f)->GetArray("tokenizer.ggml.tokens").value()->items.size(),
            262144u);
}

}  // namespace
}  // namespace weft::gguf
