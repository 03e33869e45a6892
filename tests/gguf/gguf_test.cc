// GGUF reader, writer and typed accessors on files built in memory.
#include "gguf/gguf.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "gguf/writer.h"
#include "tests/gguf/gguf_bytes.h"

namespace weft::gguf {
namespace {

using testing::GgufBytes;
using testing::ParseBytes;

// Every value type, arrays of each, a nested array and an empty array.
GgufWriter AllTypesWriter(uint32_t version = 3) {
  GgufWriter w(version);
  w.Set("u8", Value(uint8_t{200}));
  w.Set("i8", Value(int8_t{-100}));
  w.Set("u16", Value(uint16_t{60000}));
  w.Set("i16", Value(int16_t{-30000}));
  w.SetUint32("u32", 4000000000u);
  w.SetInt32("i32", -2000000000);
  w.SetFloat32("f32", 1.5f);
  w.SetBool("bool", true);
  w.SetString("str", std::string("h\xc3\xa9llo\0x", 8));
  w.SetUint64("u64", 1ull << 63);
  w.Set("i64", Value(int64_t{-(1ll << 62)}));
  w.Set("f64", Value(0.1));
  w.SetStringArray("strs", {"a", "", "ccc"});
  w.SetFloat32Array("f32s", {0.5f, -2.f});
  w.SetInt32Array("i32s", {1, -2, 3});
  Array u32s{ValueType::kUint32, {Value(uint32_t{7}), Value(uint32_t{8})}};
  w.Set("u32s", Value(u32s));
  Array inner1{ValueType::kString, {Value("x"), Value("y")}};
  Array inner2{ValueType::kString, {}};
  w.Set("nested", Value(Array{ValueType::kArray, {Value(inner1), Value(inner2)}}));
  w.Set("empty", Value(Array{ValueType::kUint8, {}}));
  return w;
}

TEST(Gguf, ParsesEveryValueType) {
  auto bytes = AllTypesWriter().Serialize();
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.metadata().size(), 18u);
  EXPECT_EQ(g.metadata()[0].key, "u8");
  EXPECT_EQ(g.tensors().size(), 0u);
  EXPECT_EQ(*g.GetUint32("u8"), 200u);
  EXPECT_EQ(*g.GetInt64("i8"), -100);
  EXPECT_EQ(*g.GetUint32("u16"), 60000u);
  EXPECT_EQ(*g.GetInt64("i16"), -30000);
  EXPECT_EQ(*g.GetUint32("u32"), 4000000000u);
  EXPECT_EQ(*g.GetInt64("i32"), -2000000000);
  EXPECT_EQ(*g.GetFloat32("f32"), 1.5f);
  EXPECT_TRUE(*g.GetBool("bool"));
  EXPECT_EQ(*g.GetString("str"), std::string("h\xc3\xa9llo\0x", 8));
  EXPECT_EQ(*g.GetUint64("u64"), 1ull << 63);
  EXPECT_EQ(*g.GetInt64("i64"), -(1ll << 62));
  EXPECT_FLOAT_EQ(*g.GetFloat32("f64"), 0.1f);
  EXPECT_EQ(*g.GetStringArray("strs"), (std::vector<std::string>{"a", "", "ccc"}));
  EXPECT_EQ(*g.GetFloat32Array("f32s"), (std::vector<float>{0.5f, -2.f}));
  EXPECT_EQ(*g.GetInt32Array("i32s"), (std::vector<int32_t>{1, -2, 3}));
  EXPECT_EQ(*g.GetInt32Array("u32s"), (std::vector<int32_t>{7, 8}));
  const Array* nested = *g.GetArray("nested");
  ASSERT_EQ(nested->elem_type, ValueType::kArray);
  ASSERT_EQ(nested->items.size(), 2u);
  EXPECT_EQ(nested->items[0].array().items[1].str(), "y");
  EXPECT_TRUE(nested->items[1].array().items.empty());
  EXPECT_TRUE((*g.GetArray("empty"))->items.empty());
  // Every value survives as written.
  GgufWriter w = AllTypesWriter();
  for (size_t i = 0; i < w.metadata().size(); ++i) {
    EXPECT_EQ(g.metadata()[i].key, w.metadata()[i].key);
    EXPECT_TRUE(g.metadata()[i].value == w.metadata()[i].value)
        << g.metadata()[i].key;
  }
}

TEST(Gguf, MissingKeyIsNotFoundNamingTheKey) {
  auto bytes = AllTypesWriter().Serialize();
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok());
  auto s = (*f)->GetUint32("llama.block_count");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kNotFound);
  EXPECT_NE(s.status().message().find("'llama.block_count' not found"),
            std::string::npos);
  EXPECT_EQ((*f)->Find("nope"), nullptr);
  EXPECT_FALSE((*f)->Has("nope"));
  EXPECT_TRUE((*f)->Has("u8"));
}

TEST(Gguf, WrongTypeNamesKeyAndTypes) {
  auto bytes = AllTypesWriter().Serialize();
  auto f = ParseBytes(*bytes);
  const GgufFile& g = **f;
  auto expect = [](const Status& s, const std::string& what) {
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  expect(g.GetUint32("str").status(), "key 'str' has type string, want uint32");
  expect(g.GetString("u32").status(), "key 'u32' has type uint32, want string");
  expect(g.GetFloat32("i32").status(), "key 'i32' has type int32, want float32");
  expect(g.GetBool("u8").status(), "key 'u8' has type uint8, want bool");
  expect(g.GetArray("f32").status(), "key 'f32' has type float32, want array");
  expect(g.GetStringArray("f32s").status(),
         "key 'f32s' has type array of float32, want array of string");
  expect(g.GetFloat32Array("strs").status(),
         "key 'strs' has type array of string, want array of float32");
  expect(g.GetInt32Array("f32s").status(),
         "key 'f32s' has type array of float32, want array of int32");
  // Integers that do not fit.
  expect(g.GetUint32("i32").status(), "does not fit uint32");
  expect(g.GetUint32("u64").status(), "does not fit uint32");
  expect(g.GetInt64("u64").status(), "does not fit int64");
  expect(g.GetUint64("i8").status(), "does not fit uint64");
  EXPECT_EQ(*g.GetUint64("u8"), 200u);
  EXPECT_EQ(*g.GetInt64("u32"), 4000000000ll);
}

TEST(Gguf, Int32ArrayRejectsOutOfRangeItems) {
  GgufWriter w;
  w.Set("big", Value(Array{ValueType::kUint32, {Value(uint32_t{3000000000u})}}));
  auto f = ParseBytes(*w.Serialize());
  auto s = (*f)->GetInt32Array("big");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("item 0"), std::string::npos);
}

TEST(Gguf, VersionTwoParses) {
  auto bytes = AllTypesWriter(2).Serialize();
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->version(), 2u);
}

TEST(Gguf, TensorsAreAlignedZeroCopyViews) {
  GgufWriter w;
  w.SetString("general.architecture", "test");
  std::vector<uint8_t> a(4 * 3 * 2), b(18 * 2);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<uint8_t>(100 + i);
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {3, 2}, a).ok());
  ASSERT_TRUE(w.AddTensor("b", GgmlType::kQ4_0, {64}, b).ok());
  auto bytes = w.Serialize();
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size() % 32, 0u);
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.data_offset() % 32, 0u);
  ASSERT_EQ(g.tensors().size(), 2u);
  const TensorInfo* ta = g.FindTensor("a");
  const TensorInfo* tb = g.FindTensor("b");
  ASSERT_NE(ta, nullptr);
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(g.FindTensor("c"), nullptr);
  EXPECT_EQ(ta->dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(ta->ne(0), 3u);
  EXPECT_EQ(ta->ne(1), 2u);
  EXPECT_EQ(ta->ne(3), 1u);
  EXPECT_EQ(ta->n_elements, 6u);
  EXPECT_EQ(ta->nbytes, 24u);
  EXPECT_EQ(ta->offset, 0u);
  EXPECT_EQ(tb->type, GgmlType::kQ4_0);
  EXPECT_EQ(tb->offset, 32u);  // 24 bytes padded to 32
  EXPECT_EQ(tb->nbytes, 36u);
  EXPECT_EQ(ta->data, bytes->data() + g.data_offset());  // zero-copy
  EXPECT_EQ(std::vector<uint8_t>(ta->data, ta->data + ta->nbytes), a);
  EXPECT_EQ(std::vector<uint8_t>(tb->bytes().begin(), tb->bytes().end()), b);
}

TEST(Gguf, CustomAlignment) {
  GgufWriter w;
  w.SetUint32("general.alignment", 64);
  std::vector<uint8_t> a(4), b(4);
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {1}, a).ok());
  ASSERT_TRUE(w.AddTensor("b", GgmlType::kF32, {1}, b).ok());
  auto f = ParseBytes(*w.Serialize());
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->data_offset() % 64, 0u);
  EXPECT_EQ((*f)->FindTensor("b")->offset, 64u);
}

TEST(Gguf, PaddingWithoutTensors) {
  GgufWriter w;
  w.SetString("k", "v");
  auto padded = w.Serialize();  // gguf-py pads even without tensors
  EXPECT_EQ(padded->size(), 64u);
  w.set_pad_without_tensors(false);
  auto bytes = w.Serialize();
  EXPECT_EQ(bytes->size(), 24u + 9 + 4 + 9);
  auto f = ParseBytes(*bytes);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)->data_offset(), 64u);  // past the end; no tensors
  GgufWriter copy;
  ASSERT_TRUE(copy.CopyFrom(**f).ok());
  EXPECT_EQ(*copy.Serialize(), *bytes);
  auto g = ParseBytes(*padded);
  ASSERT_TRUE(g.ok());
  GgufWriter copy2;
  ASSERT_TRUE(copy2.CopyFrom(**g).ok());
  EXPECT_EQ(*copy2.Serialize(), *padded);
}

TEST(Gguf, HandBuiltFileMatchesWriter) {
  GgufBytes b;
  b.Header(3, 1, 2).KvStr("general.architecture", "x").KvU32("n", 5);
  b.Tensor("w", {4}, GgmlType::kF32, 0).PadTo(32);
  float data[4] = {1, 2, 3, 4};
  b.Raw(data, 16).PadTo(32);
  GgufWriter w;
  w.SetString("general.architecture", "x");
  w.SetUint32("n", 5);
  ASSERT_TRUE(w.AddTensor("w", GgmlType::kF32, {4},
                          {reinterpret_cast<uint8_t*>(data), 16}).ok());
  EXPECT_EQ(*w.Serialize(), b.bytes());
}

TEST(GgufWriter, SetReplacesInPlace) {
  GgufWriter w;
  w.SetUint32("a", 1);
  w.SetUint32("b", 2);
  w.SetString("a", "x");
  ASSERT_EQ(w.metadata().size(), 2u);
  EXPECT_EQ(w.metadata()[0].key, "a");
  EXPECT_EQ(w.metadata()[0].value.str(), "x");
}

TEST(GgufWriter, RejectsBadTensors) {
  GgufWriter w;
  std::vector<uint8_t> d(16);
  EXPECT_FALSE(w.AddTensor("a", GgmlType::kF32, {5}, d).ok());  // 20 bytes
  EXPECT_FALSE(w.AddTensor("a", GgmlType::kQ4_0, {4}, d).ok());  // block 32
  EXPECT_FALSE(w.AddTensor("a", GgmlType::kF32, {4, 0}, d).ok());
  EXPECT_FALSE(w.AddTensor("a", GgmlType::kF32, {1, 1, 1, 1, 4}, d).ok());
  EXPECT_FALSE(w.AddTensor("a", static_cast<GgmlType>(4), {4}, d).ok());
  ASSERT_TRUE(w.AddTensor("a", GgmlType::kF32, {4}, d).ok());
  Status dup = w.AddTensor("a", GgmlType::kF32, {4}, d);
  EXPECT_NE(dup.message().find("duplicate tensor name 'a'"), std::string::npos);
}

TEST(GgufWriter, RejectsBadAlignmentVersionAndArrays) {
  GgufWriter w;
  w.SetUint32("general.alignment", 24);
  EXPECT_FALSE(w.Serialize().ok());
  GgufWriter v1(1);
  EXPECT_FALSE(v1.Serialize().ok());
  GgufWriter mixed;
  mixed.Set("m", Value(Array{ValueType::kUint32, {Value(int8_t{1})}}));
  EXPECT_FALSE(mixed.Serialize().ok());
}

TEST(GgufWriter, WriteFileAndOpen) {
  std::string path = ::testing::TempDir() + "/weft_gguf_test_" +
                     std::to_string(::getpid()) + ".gguf";
  GgufWriter w = AllTypesWriter();
  std::vector<uint8_t> d(32, 7);
  ASSERT_TRUE(w.AddTensor("t", GgmlType::kF16, {16}, d).ok());
  ASSERT_TRUE(w.WriteFile(path).ok());
  auto f = GgufFile::Open(path);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->path(), path);
  EXPECT_EQ((*f)->FindTensor("t")->data[5], 7);
  // CopyFrom + Serialize reproduces the file.
  GgufWriter copy;
  ASSERT_TRUE(copy.CopyFrom(**f).ok());
  auto again = copy.Serialize();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(std::equal(again->begin(), again->end(), (*f)->bytes().begin(),
                         (*f)->bytes().end()));
  std::remove(path.c_str());
}

TEST(GgufWriter, OpenMissingFileIsNotFound) {
  auto f = GgufFile::Open("/nonexistent/dir/x.gguf");
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kNotFound);
}

TEST(GgufValue, DebugStringAndEquality) {
  EXPECT_EQ(Value(uint32_t{5}).DebugString(), "5");
  EXPECT_EQ(Value(int8_t{-5}).DebugString(), "-5");
  EXPECT_EQ(Value(true).DebugString(), "true");
  EXPECT_EQ(Value("a\nb").DebugString(), "\"a\\x0ab\"");
  EXPECT_EQ(Value(1ull << 63).DebugString(), "9223372036854775808");
  Array big{ValueType::kString, std::vector<Value>(100, Value("x"))};
  EXPECT_EQ(Value(big).DebugString(), "[100 x string]");
  Array small{ValueType::kInt32, {Value(int32_t{1}), Value(int32_t{2})}};
  EXPECT_EQ(Value(small).DebugString(), "[1, 2]");
  EXPECT_TRUE(Value(uint32_t{1}) == Value(uint32_t{1}));
  EXPECT_FALSE(Value(uint32_t{1}) == Value(int32_t{1}));
  EXPECT_TRUE(Value(std::nanf("")) == Value(std::nanf("")));
  EXPECT_EQ(ValueTypeName(ValueType::kFloat64), "float64");
  EXPECT_TRUE(Value(int16_t{1}).is_integer());
  EXPECT_FALSE(Value(1.0f).is_integer());
  EXPECT_TRUE(Value(1.0).is_float());
}

}  // namespace
}  // namespace weft::gguf
