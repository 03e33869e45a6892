#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/gbnf.h"
#include "sampling/grammar.h"
#include "sampling/grammar_cache.h"
#include "sampling/grammar_constraint.h"
#include "sampling/regex_grammar.h"
#include "sampling/schema_grammar.h"

namespace weft::sampling {
namespace {

// Whether every proper prefix of text is accepted and not rejected early.
bool Accepts(const Grammar& g, std::string_view text) {
  GrammarState s = g.Start();
  for (char c : text) {
    if (!g.Advance(&s, static_cast<uint8_t>(c))) return false;
  }
  return g.Complete(s);
}

std::shared_ptr<const Grammar> Must(StatusOr<std::shared_ptr<const Grammar>> g) {
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? *g : nullptr;
}

TEST(GbnfTest, AcceptsAndRejects) {
  auto g = Must(CompileGbnf(R"(
    # a comment
    root ::= greeting (" " name){1,2} "!"?
    greeting ::= "hi" | "h\u00e9llo"
    name ::= [A-Z] [a-z]*  # capitalized
  )"));
  ASSERT_TRUE(g);
  for (const char* ok : {"hi Bob", "h\xC3\xA9llo Al Ed!", "hi X!"}) EXPECT_TRUE(Accepts(*g, ok)) << ok;
  for (const char* bad : {"hi", "hi bob", "hi A B C", "hello Bob", "hi Bob!!"}) {
    EXPECT_FALSE(Accepts(*g, bad)) << bad;
  }
  // A rule first named after a group (whose anonymous rules take ids).
  auto after = Must(CompileGbnf("root ::= (\"a\" \"a\"?)+ tail\ntail ::= \"b\" | \"c\""));
  EXPECT_TRUE(Accepts(*after, "aaab"));
  EXPECT_FALSE(Accepts(*after, "aaa"));
  auto neg = Must(CompileGbnf("root ::= [^a-c\\n]+ ."));
  EXPECT_TRUE(Accepts(*neg, "xyz\xE2\x82\xAC"));
  EXPECT_FALSE(Accepts(*neg, "ab"));
}

TEST(GbnfTest, ErrorsNameTheProblem) {
  auto err = [](const char* text) { return CompileGbnf(text).status().message(); };
  EXPECT_NE(err("root ::= x").find("undefined rule 'x'"), std::string::npos);
  EXPECT_NE(err("rot ::= \"a\"").find("no 'root'"), std::string::npos);
  EXPECT_NE(err("root ::= root \"a\" | \"b\"").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  EXPECT_NE(err("root ::= \"a\" root").find("can never finish"), std::string::npos);
  EXPECT_NE(err("root ::= <[1000]>").find("token reference"), std::string::npos);
  EXPECT_NE(err("root ::= \"a\"{5000}").find("out of range"), std::string::npos);
  EXPECT_FALSE(CompileGbnf(std::string(10000, '(')).ok());  // bounded nesting
}

TEST(RegexTest, AcceptsAndRejects) {
  auto g = Must(CompileRegex(R"(^(?:\d{3}-)?\d{4}|[A-F]+\.x$)"));
  for (const char* ok : {"555-1234", "1234", "ABF.x"}) EXPECT_TRUE(Accepts(*g, ok)) << ok;
  for (const char* bad : {"55-1234", "12345", "ABG.x", "AB.y", ""}) EXPECT_FALSE(Accepts(*g, bad)) << bad;
  auto w = Must(CompileRegex(R"(\w+\s[^\d]*?(a|b){2,}.)"));
  EXPECT_TRUE(Accepts(*w, "foo_1 xyzab\xC3\xA9"));
  EXPECT_FALSE(Accepts(*w, "foo 1ab!"));
  EXPECT_FALSE(Accepts(*w, "foo xa\n"));
}

TEST(RegexTest, RefusesWhatItCannotEnforce) {
  for (const char* re : {"a(?=b)", "a(?!b)", "(?<=a)b", "(a)\\1", "\\bword", "a^b", "a$b",
                         "(?i)abc", "a*+", "[[:alpha:]]", "\\pL", "(a"}) {
    EXPECT_FALSE(CompileRegex(re).ok()) << re;
  }
}

TEST(ChoiceTest, ExactlyOne) {
  auto g = Must(CompileChoice({"yes", "no", "maybe so"}));
  EXPECT_TRUE(Accepts(*g, "no"));
  EXPECT_TRUE(Accepts(*g, "maybe so"));
  EXPECT_FALSE(Accepts(*g, "nope"));
  EXPECT_FALSE(Accepts(*g, "ye"));
  EXPECT_FALSE(CompileChoice({}).ok());
}

nlohmann::ordered_json Vectors() {
  std::ifstream f(WEFT_SCHEMA_VECTORS);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());  // property order matters
}

TEST(SchemaTest, VectorsValidAcceptedInvalidRejected) {
  const nlohmann::ordered_json v = Vectors();
  ASSERT_FALSE(v["cases"].empty());
  for (const auto& c : v["cases"]) {
    const std::string name = c["name"];
    const auto t0 = std::chrono::steady_clock::now();
    auto g = CompileJsonSchema(c["schema"].dump());
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(g.ok()) << name << ": " << g.status().ToString();
    EXPECT_LT(ms, 50.0) << name << " compile time";
    for (const auto& text : c["valid"]) {
      EXPECT_TRUE(Accepts(**g, text.get<std::string>())) << name << ": " << text;
    }
    for (const auto& text : c["invalid"]) {
      EXPECT_FALSE(Accepts(**g, text.get<std::string>())) << name << ": " << text;
    }
  }
}

TEST(SchemaTest, UnsupportedKeywordsAreErrors) {
  for (const auto& c : Vectors()["unsupported"]) {
    auto g = CompileJsonSchema(c["schema"].dump());
    ASSERT_FALSE(g.ok()) << c["name"];
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(g.status().message().find(c["name"].get<std::string>()), std::string::npos)
        << g.status().message();
  }
  EXPECT_FALSE(CompileJsonSchema("{not json").ok());
  // Deep nesting is an error, not a stack overflow.
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += R"({"type": "array", "items": )";
  deep += "true" + std::string(5000, '}');
  EXPECT_FALSE(CompileJsonSchema(deep).ok());
}

TEST(GrammarTest, StackCapsFailClosed) {
  // Nesting deeper than kMaxStackDepth is rejected, not grown without bound.
  auto g = Must(CompileGbnf("root ::= \"(\" root \")\" | \"x\""));
  GrammarState s = g->Start();
  size_t depth = 0;
  while (depth < 10 * kMaxStackDepth && g->Advance(&s, '(')) ++depth;
  EXPECT_LT(depth, 10 * kMaxStackDepth);
}

// A synthetic vocabulary: all 1- and 2-byte strings over a small alphabet
// plus some longer pieces.
std::shared_ptr<const VocabBytes> SmallVocab() {
  const std::string alphabet = "{}[]\":, 0123456789abcnulrtex-\n";
  std::vector<std::string> pieces = {""};  // token 0: a control token (the end)
  for (char a : alphabet) pieces.push_back(std::string(1, a));
  for (char a : alphabet) {
    for (char b : alphabet) pieces.push_back(std::string{a, b});
  }
  for (const char* p : {"{\"", "\": ", "null", "true", "false", "\"a\"", "123", "\": [", "]}"}) {
    pieces.push_back(p);
  }
  return std::make_shared<const VocabBytes>(pieces);
}

TEST(GrammarConstraintTest, MaskEqualsBruteForce) {
  auto g = Must(CompileConstraint(ConstraintKind::kJsonSchema, R"({"type": "object",
      "properties": {"a": {"type": "array", "items": {"type": "integer", "maximum": 99}},
                     "b": {"enum": [null, true]}},
      "required": ["a", "b"], "additionalProperties": false})"));
  ASSERT_TRUE(g);
  auto vocab = SmallVocab();
  GrammarConstraint c(g, vocab, {0});
  const std::string text = "{\"a\": [1, 23, 99], \"b\": true}";
  // Feed the text by greedy longest allowed pieces, checking every mask.
  size_t pos = 0;
  while (true) {
    const auto mask = c.AllowedMask();
    for (int32_t t = 0; t < vocab->size(); ++t) {
      ASSERT_EQ(MaskHas(mask, t), c.Allows(t)) << "token " << t << " at " << pos;
    }
    if (pos == text.size()) break;
    int32_t best = -1;
    for (int32_t t = 1; t < vocab->size(); ++t) {
      const std::string_view p = vocab->piece(t);
      if (MaskHas(mask, t) && text.compare(pos, p.size(), p) == 0 &&
          (best < 0 || p.size() > vocab->piece(best).size())) {
        best = t;
      }
    }
    ASSERT_GE(best, 0) << "stuck at " << pos;
    EXPECT_FALSE(c.Allows(0));
    c.Accept(best);
    pos += vocab->piece(best).size();
  }
  EXPECT_TRUE(c.complete());
  EXPECT_TRUE(c.Allows(0));
}

TEST(GrammarCacheTest, SameCanonicalTextSameGrammar) {
  auto a = CompileConstraint(ConstraintKind::kJsonSchema, R"({"type": "string"})");
  auto b = CompileConstraint(ConstraintKind::kJsonSchema, R"({ "type":"string" })");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->get(), b->get());
  auto c = CompileConstraint(ConstraintKind::kChoice, R"(["x", "y"])");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(Accepts(**c, "y"));
  EXPECT_FALSE(CompileConstraint(ConstraintKind::kChoice, R"([1])").ok());
  GrammarCache small(2);
  for (int i = 0; i < 5; ++i) {
    auto g = small.GetOrCompile(std::to_string(i), [] { return CompileRegex("a"); });
    ASSERT_TRUE(g.ok());
  }
  EXPECT_EQ(small.size(), 2u);
}

}  // namespace
}  // namespace weft::sampling
