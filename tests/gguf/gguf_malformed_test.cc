// Hand-broken GGUF files: one per check of the parser. Each must fail with a
// one-line error naming the file, the byte offset and the problem.
#include <gtest/gtest.h>

#include <random>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "tests/gguf/gguf_bytes.h"

namespace weft::gguf {
namespace {

using testing::GgufBytes;
using testing::ParseBytes;

constexpr uint32_t kTypeU32 = static_cast<uint32_t>(ValueType::kUint32);
constexpr uint32_t kTypeString = static_cast<uint32_t>(ValueType::kString);
constexpr uint32_t kTypeArray = static_cast<uint32_t>(ValueType::kArray);
constexpr uint32_t kTypeBool = static_cast<uint32_t>(ValueType::kBool);

// Parses and expects an error whose message has "t.gguf: offset <offset>: "
// and `what`.
void ExpectError(const GgufBytes& b, uint64_t offset, const std::string& what) {
  auto r = ParseBytes(b.bytes());
  ASSERT_FALSE(r.ok()) << "parsed without error; want: " << what;
  const std::string m = r.status().message();
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("t.gguf: offset " + std::to_string(offset) + ": "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
}

TEST(GgufMalformed, EmptyFile) {
  ExpectError(GgufBytes(), 0, "file too small for a GGUF header (0 bytes)");
}

TEST(GgufMalformed, BadMagic) {
  GgufBytes b;
  b.Raw("\x7f" "ELF", 4).U32(3).U64(0).U64(0);
  ExpectError(b, 0, "bad magic \"\\x7fELF\"");
}

TEST(GgufMalformed, VersionOneIsUnsupported) {
  ExpectError(GgufBytes().Header(1, 0, 0), 4, "unsupported GGUF version 1");
}

TEST(GgufMalformed, FutureVersionIsUnsupported) {
  ExpectError(GgufBytes().Header(4, 0, 0), 4, "unsupported GGUF version 4");
}

TEST(GgufMalformed, BigEndian) {
  ExpectError(GgufBytes().Header(0x03000000u, 0, 0), 4, "big-endian");
}

TEST(GgufMalformed, TruncatedHeader) {
  GgufBytes b;
  b.U32(kMagic).U32(3).U32(0);
  ExpectError(b, 8, "truncated file: tensor count needs 8 bytes, 4 left");
}

TEST(GgufMalformed, KvCountPastEnd) {
  ExpectError(GgufBytes().Header(3, 0, 1000000), 16,
              "metadata count 1000000 past end of file (size 24)");
}

TEST(GgufMalformed, TensorCountPastEnd) {
  ExpectError(GgufBytes().Header(3, 1ull << 60, 0), 8,
              "tensor count 1152921504606846976 past end of file");
}

TEST(GgufMalformed, TensorCountPastEndAfterMetadata) {
  GgufBytes b;
  // 1 tensor fits the bytes left after the header, not after the metadata.
  b.Header(3, 1, 1).KvStr("k", std::string(16, 'x'));
  ExpectError(b, b.size(), "tensor count 1 past end of file");
}

TEST(GgufMalformed, KeyLengthPastEnd) {
  GgufBytes b;
  b.Header(3, 0, 1).U64(9999999).U32(kTypeU32).U32(0);
  ExpectError(b, 24, "key length 9999999 past end of file (size 40)");
}

TEST(GgufMalformed, StringLengthPastEnd) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeString).U64(1ull << 62);
  ExpectError(b, 24 + 9 + 4, "string length 4611686018427387904 past end");
}

TEST(GgufMalformed, ArrayCountPastEnd) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeArray).U32(kTypeU32).U64(3).U32(1);
  ExpectError(b, 24 + 9 + 4 + 4, "array count 3 of uint32 past end of file");
}

TEST(GgufMalformed, ArrayOfStringsCountPastEnd) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeArray).U32(kTypeString).U64(1ull << 61);
  ExpectError(b, 24 + 9 + 4 + 4, "array count 2305843009213693952 of string");
}

TEST(GgufMalformed, UnknownValueType) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(13).U32(0);
  ExpectError(b, 24 + 9, "unknown value type 13");
}

TEST(GgufMalformed, UnknownArrayElementType) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeArray).U32(99).U64(0);
  ExpectError(b, 24 + 9 + 4, "unknown array element type 99");
}

TEST(GgufMalformed, InvalidBool) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeBool).U8(2);
  ExpectError(b, 24 + 9 + 4, "invalid bool value 2");
}

// Metadata "k" = array nested `depth` deep, innermost an empty uint32 array.
GgufBytes NestedArrays(int depth) {
  GgufBytes b;
  b.Header(3, 0, 1).Str("k").U32(kTypeArray);
  for (int i = 1; i < depth; ++i) b.U32(kTypeArray).U64(1);
  b.U32(kTypeU32).U64(0);
  return b;
}

TEST(GgufMalformed, NestingDepthLimit) {
  auto ok = ParseBytes(NestedArrays(8).bytes());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  const Value* v = (*ok)->Find("k");
  int depth = 0;
  while (v->type() == ValueType::kArray) {
    ++depth;
    if (v->array().items.empty()) break;
    v = &v->array().items[0];
  }
  EXPECT_EQ(depth, 8);
  // Depth 9: the 8th array declares array elements.
  ExpectError(NestedArrays(9), 24 + 9 + 4 + 7 * 12,
              "array nesting deeper than 8");
}

TEST(GgufMalformed, DeepNestingDoesNotRecurseFar) {
  // 100000 levels declared; rejected at level 8 without deep recursion.
  ExpectError(NestedArrays(100000), 24 + 9 + 4 + 7 * 12, "nesting deeper");
}

TEST(GgufMalformed, DuplicateKey) {
  GgufBytes b;
  b.Header(3, 0, 2).KvU32("a", 1);
  size_t at = b.size();
  b.KvU32("a", 2);
  ExpectError(b, at, "duplicate key 'a'");
}

TEST(GgufMalformed, AlignmentZero) {
  GgufBytes b;
  b.Header(3, 0, 1).KvU32("general.alignment", 0);
  ExpectError(b, 24 + 8 + 17, "general.alignment 0 is not a nonzero power of two");
}

TEST(GgufMalformed, AlignmentNotPowerOfTwo) {
  GgufBytes b;
  b.Header(3, 0, 1).KvU32("general.alignment", 48);
  ExpectError(b, 24 + 8 + 17, "general.alignment 48 is not a nonzero power");
}

TEST(GgufMalformed, AlignmentWrongType) {
  GgufBytes b;
  b.Header(3, 0, 1).KvStr("general.alignment", "32");
  ExpectError(b, 24 + 8 + 17, "general.alignment has type string, want uint32");
}

// Header with `n` tensors and no metadata; tensor infos follow.
GgufBytes WithTensors(uint64_t n) { return GgufBytes().Header(3, n, 0); }

TEST(GgufMalformed, TooManyDims) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {1, 1, 1, 1, 1}, GgmlType::kF32, 0).Zeros(64);
  ExpectError(b, 24 + 9, "tensor 't': n_dims 5 > 4");
}

TEST(GgufMalformed, ZeroDimension) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {4, 0}, GgmlType::kF32, 0).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 8, "tensor 't': dimension 1 is 0");
}

TEST(GgufMalformed, ElementCountOverflow) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {1ull << 32, 1ull << 32}, GgmlType::kF32, 0).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 8, "tensor 't': element count overflows");
}

TEST(GgufMalformed, ByteCountOverflow) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {1ull << 62}, GgmlType::kF32, 0).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 8, "tensor 't': byte count overflows");
}

TEST(GgufMalformed, UnknownTensorType) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {4}, static_cast<GgmlType>(4), 0).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 8, "tensor 't': unknown tensor type 4");
}

TEST(GgufMalformed, RowNotMultipleOfBlock) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {33, 2}, GgmlType::kQ4_0, 0).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 16,
              "row of 33 elements is not a multiple of the q4_0 block size 32");
}

TEST(GgufMalformed, MisalignedOffset) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {4}, GgmlType::kF32, 4).PadTo(32).Zeros(64);
  ExpectError(b, 24 + 9 + 4 + 8 + 4,
              "tensor 't': offset 4 is not a multiple of the alignment 32");
}

TEST(GgufMalformed, OffsetPastEnd) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {4}, GgmlType::kF32, 64).PadTo(32).Zeros(32);
  ExpectError(b, 24 + 9 + 4 + 8 + 4, "tensor 't': data [64, +16) past end");
}

TEST(GgufMalformed, DataPastEnd) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {16}, GgmlType::kF32, 0).PadTo(32).Zeros(63);
  ExpectError(b, 24 + 9 + 4 + 8 + 4,
              "tensor 't': data [0, +64) past end of file (data section is 63");
}

TEST(GgufMalformed, DataSectionPastEnd) {
  GgufBytes b = WithTensors(1);
  b.Tensor("t", {4}, GgmlType::kF32, 0);  // 57 bytes, no padding, no data
  ExpectError(b, 57, "tensor data section at 64 starts past end of file");
}

TEST(GgufMalformed, OverlappingTensors) {
  GgufBytes b = WithTensors(2);
  b.Tensor("a", {16}, GgmlType::kF32, 0);
  size_t second = b.size();
  b.Tensor("b", {16}, GgmlType::kF32, 32).PadTo(32).Zeros(128);
  ExpectError(b, second + 9 + 4 + 8 + 4,
              "tensor 'b' [32, 96) overlaps tensor 'a' [0, 64)");
}

TEST(GgufMalformed, OverlappingTensorsOutOfOrder) {
  GgufBytes b = WithTensors(3);
  b.Tensor("a", {8}, GgmlType::kF32, 64);
  b.Tensor("b", {8}, GgmlType::kF32, 0);
  b.Tensor("c", {16}, GgmlType::kF32, 32).PadTo(32).Zeros(256);
  auto r = ParseBytes(b.bytes());
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("overlaps"), std::string::npos)
      << r.status().message();
}

TEST(GgufMalformed, DuplicateTensorName) {
  GgufBytes b = WithTensors(2);
  b.Tensor("w", {8}, GgmlType::kF32, 0);
  size_t second = b.size();
  b.Tensor("w", {8}, GgmlType::kF32, 32).PadTo(32).Zeros(64);
  ExpectError(b, second, "duplicate tensor name 'w'");
}

TEST(GgufMalformed, TensorNamePastEnd) {
  GgufBytes b = WithTensors(1);
  b.U64(1000).Zeros(24);
  ExpectError(b, 24, "tensor name length 1000 past end of file (size 56)");
}

TEST(GgufMalformed, TruncatedTensorInfo) {
  GgufBytes b = WithTensors(1);
  b.Str("t").U32(2).U64(4).Zeros(7);
  ExpectError(b, 24 + 9 + 4 + 8, "truncated file: tensor dimension needs 8");
}

TEST(GgufMalformed, ErrorCodes) {
  auto trunc = ParseBytes(GgufBytes().U32(kMagic).U32(3).bytes());
  EXPECT_EQ(trunc.status().code(), StatusCode::kDataLoss);
  auto magic = ParseBytes(GgufBytes().Header(1, 0, 0).bytes());
  EXPECT_EQ(magic.status().code(), StatusCode::kInvalidArgument);
}

// A small valid file with metadata of every kind and two tensors.
std::vector<uint8_t> SmallValidFile() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 2);
  w.SetStringArray("tokenizer.ggml.tokens", {"a", "bb", "ccc"});
  w.SetFloat32Array("tokenizer.ggml.scores", {1.f, 2.f, 3.f});
  w.SetBool("b", true);
  Array nested{ValueType::kArray, {Value(Array{ValueType::kInt8, {Value(int8_t{-1})}})}};
  w.Set("nested", Value(nested));
  std::vector<uint8_t> f32(4 * 8, 1), q8(34 * 16, 2);
  CHECK(w.AddTensor("a", GgmlType::kF32, {8}, f32).ok());
  CHECK(w.AddTensor("b", GgmlType::kQ8_0, {32, 16}, q8).ok());
  return *w.Serialize();
}

TEST(GgufMalformed, EveryTruncationFails) {
  std::vector<uint8_t> full = SmallValidFile();
  ASSERT_TRUE(ParseBytes(full).ok());
  for (size_t n = 0; n < full.size(); ++n) {
    std::vector<uint8_t> cut(full.begin(), full.begin() + n);
    auto r = ParseBytes(cut);
    EXPECT_FALSE(r.ok()) << "prefix of " << n << " bytes parsed";
    if (!r.ok()) {
      EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
    }
  }
}

// Random byte mutations must never crash (a cheap in-tree fuzzer; the real
// one is tests/fuzz/gguf_fuzz.cc).
TEST(GgufMalformed, RandomMutationsNeverCrash) {
  std::vector<uint8_t> base = SmallValidFile();
  std::mt19937 rng(1234);
  int parsed = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    std::vector<uint8_t> b = base;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int i = 0; i < flips; ++i) {
      size_t pos = rng() % b.size();
      switch (rng() % 3) {
        case 0: b[pos] = static_cast<uint8_t>(rng()); break;
        case 1: b[pos] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
        default: b[pos] = (rng() % 2) ? 0xff : 0x00; break;
      }
    }
    auto r = ParseBytes(b);
    if (r.ok()) {
      ++parsed;
      for (const auto& t : (*r)->tensors()) {
        ASSERT_LE(t.data + t.nbytes, b.data() + b.size());
      }
    }
  }
  EXPECT_GT(parsed, 0);  // some mutations only touch tensor data
}

}  // namespace
}  // namespace weft::gguf
