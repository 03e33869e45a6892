// Shared by the round-trip tests: reading a GGUF file and writing back what
// was read must reproduce it byte for byte.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"

namespace weft::gguf {

inline void ExpectRoundTrip(const std::string& path) {
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

}  // namespace weft::gguf
