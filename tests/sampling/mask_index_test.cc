// GrammarMaskIndex (mask_index.h): the mask of every state reached must be
// exactly the full vocabulary walk's (GrammarConstraint::ReferenceMask), on
// the schema corpus, GBNF and regex grammars, and states near the caps.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sampling/gbnf.h"
#include "sampling/grammar_cache.h"
#include "sampling/grammar_constraint.h"
#include "sampling/mask_index.h"
#include "sampling/regex_grammar.h"

namespace weft::sampling {
namespace {

// Token 0 is the end token. One- and two-byte pieces over JSON's
// punctuation and some letters, and every 3..6-byte substring of `texts`
// (pieces that close a string and go on, as real vocabularies have).
std::shared_ptr<const VocabBytes> VocabFor(const std::vector<std::string>& texts) {
  const std::string alphabet = "{}[]\":, 0123456789abcdenlrtuxyz-.\\\n";
  std::set<std::string> set;
  for (char a : alphabet) {
    set.insert(std::string(1, a));
    for (char b : alphabet) set.insert(std::string{a, b});
  }
  for (const std::string& t : texts) {
    for (size_t i = 0; i < t.size(); ++i) {
      set.insert(t.substr(i, 1));
      for (size_t n = 3; n <= 6 && i + n <= t.size(); ++n) set.insert(t.substr(i, n));
    }
  }
  for (const char* p : {"\xC3", "\xA9", "\xC3\xA9", "\": \"", "\"}, {\"", "\"]}", "\",\""}) {
    set.insert(p);
  }
  std::vector<std::string> pieces = {""};
  pieces.insert(pieces.end(), set.begin(), set.end());
  return std::make_shared<const VocabBytes>(std::move(pieces));
}

// Walks `g` from its start, checking every mask against the reference:
// first along `text` (longest allowed pieces), then by random allowed
// tokens. Returns the number of masks checked.
int CheckWalk(const std::shared_ptr<const Grammar>& g,
              const std::shared_ptr<const VocabBytes>& vocab, const std::string& text, int seed,
              int steps) {
  GrammarConstraint c(g, vocab, {0});
  std::mt19937 rng(seed);
  size_t pos = 0;
  int checked = 0;
  for (int step = 0; step < steps; ++step) {
    const std::vector<uint64_t> mask(c.AllowedMask().begin(), c.AllowedMask().end());
    const std::vector<uint64_t> ref = c.ReferenceMask();
    ++checked;
    if (mask != ref) {
      for (int32_t t = 0; t < vocab->size(); ++t) {
        EXPECT_EQ(MaskHas(mask, t), MaskHas(ref, t))
            << "token '" << vocab->piece(t) << "' after " << step << " tokens of '" << text
            << "' seed " << seed;
      }
      return checked;
    }
    std::vector<int32_t> allowed;
    int32_t follow = -1;
    for (int32_t t = 1; t < vocab->size(); ++t) {
      if (!MaskHas(mask, t)) continue;
      allowed.push_back(t);
      const std::string_view p = vocab->piece(t);
      if (pos < text.size() && text.compare(pos, p.size(), p) == 0 &&
          (follow < 0 || p.size() > vocab->piece(follow).size())) {
        follow = t;
      }
    }
    if (pos < text.size() && follow < 0) pos = text.size();  // off the text
    const int32_t next =
        follow >= 0 ? follow
        : allowed.empty() ? -1
                          : allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
    if (next < 0) break;
    if (follow >= 0) pos += vocab->piece(follow).size();
    c.Accept(next);
  }
  return checked;
}

nlohmann::ordered_json Vectors() {
  std::ifstream f(WEFT_SCHEMA_VECTORS);
  std::stringstream ss;
  ss << f.rdbuf();
  return nlohmann::ordered_json::parse(ss.str());
}

TEST(GrammarMaskIndexTest, SchemaCorpusMasksEqualTheFullWalk) {
  const nlohmann::ordered_json v = Vectors();
  std::vector<std::string> texts;
  for (const auto& c : v["cases"]) {
    for (const auto& s : c["valid"]) texts.push_back(s);
  }
  const auto vocab = VocabFor(texts);
  int checked = 0;
  for (const auto& c : v["cases"]) {
    auto g = CompileConstraint(ConstraintKind::kJsonSchema, c["schema"].dump());
    ASSERT_TRUE(g.ok()) << c["name"] << ": " << g.status().ToString();
    int seed = 0;
    for (const auto& s : c["valid"]) checked += CheckWalk(*g, vocab, s, seed++, 24);
    for (; seed < 4; ++seed) checked += CheckWalk(*g, vocab, "", seed, 24);
    if (HasFailure()) return;
  }
  EXPECT_GT(checked, 1000);
}

TEST(GrammarMaskIndexTest, GrammarsMasksEqualTheFullWalk) {
  const std::vector<std::string> texts = {"hello world 42", "(((x)))", "aaaa-bbb", "2024-01-31"};
  const auto vocab = VocabFor(texts);
  const char* gbnf[] = {
      R"g(root ::= "(" root ")" | "x")g",
      R"g(root ::= ("a" | "aa" | "a" "a")+ "-" [b]+)g",
      R"g(root ::= word (" " word)* tail
word ::= [a-z]+
tail ::= " " [0-9]+ | "!")g",
  };
  for (const char* text : gbnf) {
    auto g = CompileGbnf(text);
    ASSERT_TRUE(g.ok()) << g.status().ToString();
    for (int seed = 0; seed < 4; ++seed) {
      CheckWalk(*g, vocab, texts[static_cast<size_t>(seed)], seed, 40);
    }
  }
  auto re = CompileRegex(R"([0-9]{4}-[0-9]{2}-[0-9]{2}|[a-z ]{1,20}[0-9]*)");
  ASSERT_TRUE(re.ok()) << re.status().ToString();
  for (int seed = 0; seed < 4; ++seed) CheckWalk(*re, vocab, texts[seed], seed, 30);
}

TEST(GrammarMaskIndexTest, NearTheCapsMasksEqualTheFullWalk) {
  // Deeper than kMaxStackDepth: the depth cap decides, index or not.
  const std::string open(kMaxStackDepth + 8, '(');
  auto deep = CompileGbnf(R"g(root ::= "(" root ")" | "x")g");
  ASSERT_TRUE(deep.ok());
  auto vocab = VocabFor({"((((((((", "))))))))"});
  CheckWalk(*deep, vocab, open, 1, static_cast<int>(open.size() / 6 + 8));
  // Ambiguous: stacks multiply with every 'a' until the stack cap decides.
  auto wide = CompileGbnf(R"g(root ::= x+
x ::= "a" | "a" x | "aa" | "a" "a" "a")g");
  ASSERT_TRUE(wide.ok());
  CheckWalk(*wide, VocabFor({std::string(64, 'a')}), std::string(64, 'a'), 2, 40);
}

TEST(GrammarMaskIndexTest, EntriesAreSharedAcrossSequences) {
  auto g = CompileConstraint(ConstraintKind::kJsonSchema,
                             R"({"type": "object", "properties": {"a": {"type": "string"}}})");
  ASSERT_TRUE(g.ok());
  const auto vocab = VocabFor({R"({"a": "xyz"})"});
  auto index = GrammarMaskIndex::For(*g, vocab);
  EXPECT_EQ(index, GrammarMaskIndex::For(*g, vocab));
  CheckWalk(*g, vocab, R"({"a": "xyz"})", 0, 12);
  const size_t n = index->num_entries();
  EXPECT_GT(n, 0u);
  CheckWalk(*g, vocab, R"({"a": "xyz"})", 0, 12);
  EXPECT_EQ(index->num_entries(), n);
}

}  // namespace
}  // namespace weft::sampling
