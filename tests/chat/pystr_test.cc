// Python-compatible formatting: float repr, str/repr, json.dumps, UTF-8.
#include "chat/pystr.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace weft::chat {
namespace {

TEST(PyStr, FloatRepr) {
  EXPECT_EQ(PyFloatRepr(1.0), "1.0");
  EXPECT_EQ(PyFloatRepr(0.5), "0.5");
  EXPECT_EQ(PyFloatRepr(1e-05), "1e-05");
  EXPECT_EQ(PyFloatRepr(0.0001), "0.0001");
  EXPECT_EQ(PyFloatRepr(1e16), "1e+16");
  EXPECT_EQ(PyFloatRepr(1234567890123456.0), "1234567890123456.0");
  EXPECT_EQ(PyFloatRepr(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(PyFloatRepr(-0.0), "-0.0");
  EXPECT_EQ(PyFloatRepr(-2.5e-7), "-2.5e-07");
  EXPECT_EQ(PyFloatRepr(1.5e300), "1.5e+300");
  EXPECT_EQ(PyFloatRepr(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(PyFloatRepr(std::nan("")), "nan");
}

TEST(PyStr, StrAndRepr) {
  Value v = ListOf({Value(1), Value("a'b"), Value("q\"'"), Value::None(),
                    Value(true), Value(2.0), Value::MakeTuple({Value(1)}),
                    DictOf({{"k", Value("\n\t\x01")}})});
  EXPECT_EQ(
      PyStr(v),
      "[1, \"a'b\", 'q\"\\'', None, True, 2.0, (1,), {'k': '\\n\\t\\x01'}]");
  EXPECT_EQ(PyStr(Value("plain")), "plain");
  EXPECT_EQ(PyStr(Value()), "");
  EXPECT_EQ(PyRepr(Value("ü🌍\u00a0")), "'ü🌍\\xa0'");
}

TEST(PyStr, JsonDumps) {
  Value v = DictOf({{"b", Value(1)},
                    {"a", ListOf({Value(1.0), Value(1e-05), Value::None()})},
                    {"s", Value("ü\"\\\n\x1f")}});
  auto j = ToJson(v);
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(
      *j,
      "{\"b\": 1, \"a\": [1.0, 1e-05, null], \"s\": \"ü\\\"\\\\\\n\\u001f\"}");
  JsonOptions o;
  o.indent = 2;
  auto k = ToJson(DictOf({{"x", ListOf({Value(1)})}, {"e", ListOf({})}}), o);
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(*k, "{\n  \"x\": [\n    1\n  ],\n  \"e\": []\n}");
  JsonOptions ascii;
  ascii.ensure_ascii = true;
  EXPECT_EQ(*ToJson(Value("é🌍"), ascii), "\"\\u00e9\\ud83c\\udf0d\"");
  EXPECT_FALSE(ToJson(Value()).ok());
}

TEST(PyStr, Utf8Helpers) {
  EXPECT_EQ(CodePointCount("aü🌍"), 3u);
  EXPECT_EQ(PyStrip("\u3000 x \n", std::nullopt, true, true), "x");
  EXPECT_EQ(PyStrip("xxaxx", std::string("x"), true, false), "axx");
  auto lines = PySplitLines("a\r\nb\rc\n");
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[2], "c");
  // Invalid UTF-8 survives a round trip.
  std::string bad = "a\xff\xc3";
  auto cps = DecodeUtf8(bad);
  EXPECT_EQ(EncodeUtf8(cps, 0, cps.size()), bad);
}

TEST(Value, EqualityAndOrder) {
  EXPECT_TRUE(Equals(Value(1), Value(1.0)));
  EXPECT_TRUE(Equals(Value(true), Value(1)));
  EXPECT_FALSE(Equals(Value("1"), Value(1)));
  EXPECT_FALSE(Equals(ListOf({Value(1)}), Value::MakeTuple({Value(1)})));
  EXPECT_TRUE(Equals(DictOf({{"a", Value(1)}, {"b", Value(2)}}),
                     DictOf({{"b", Value(2)}, {"a", Value(1)}})));
  EXPECT_TRUE(*LessThan(Value("a"), Value("b")));
  EXPECT_FALSE(LessThan(Value("a"), Value(1)).ok());
  Dict d;
  d.Set(Value("x"), Value(1));
  d.Set(Value("y"), Value(2));
  d.Set(Value("x"), Value(3));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d.entries()[0].second.integer(), 3);
}

}  // namespace
}  // namespace weft::chat
