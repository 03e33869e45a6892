#include "sampling/json_constraint.h"

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sampling/json_grammar.h"
#include "sampling/sampler.h"

namespace weft::sampling {
namespace {

// The length of the longest prefix of `text` the grammar accepts.
size_t AcceptedPrefix(std::string_view text, JsonState* end = nullptr) {
  JsonState s;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!JsonAdvanceByte(&s, static_cast<uint8_t>(text[i]))) return i;
  }
  if (end) *end = s;
  return text.size();
}

bool Complete(std::string_view text) {
  JsonState s;
  return AcceptedPrefix(text, &s) == text.size() && JsonComplete(s);
}

TEST(JsonGrammarTest, AcceptsObjectsWhole) {
  for (const char* doc :
       {"{}", "\n {  }", R"({"a":1})",
        R"({"a": -0.5e+10, "b": [true, false, null]})",
        R"({"k": {"n": {"m": []}}, "s": "\" \\ \/ \b\f\n\r\t \u00e9\uD83D"})",
        R"({"x": [0, 1.25, -3E2, 4e-1, [], {}, "", [[]]]})",
        "{\"utf8\": \"h\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF\"}",
        "{\n  \"a\": [\n    1,\n    2\n  ]\n}", "{\"a\": \"\\r\\n\"}"}) {
    EXPECT_TRUE(Complete(doc)) << doc;
    // Every proper prefix is accepted but not complete.
    const std::string d(doc);
    for (size_t n = 0; n < d.size(); ++n) {
      JsonState s;
      ASSERT_EQ(AcceptedPrefix(d.substr(0, n), &s), n) << doc;
      EXPECT_FALSE(JsonComplete(s)) << d.substr(0, n);
    }
  }
}

TEST(JsonGrammarTest, RejectsAtTheFirstBadByte) {
  struct Case {
    const char* text;
    size_t accepted;  // bytes accepted before the bad one
  };
  for (const Case& c : std::vector<Case>{
           {"[1]", 0},          // the top level is an object
           {"\"a\"", 0},        // ... not a string
           {"{,}", 1},          // no leading comma
           {"{\"a\" 1}", 5},    // no colon
           {"{\"a\":}", 5},     // no value
           {"{\"a\":1,}", 7},   // no trailing comma
           {"{\"a\":01}", 6},   // no leading zeros
           {"{\"a\":-}", 6},    // a minus needs a digit
           {"{\"a\":1.}", 7},   // a dot needs a digit
           {"{\"a\":1e}", 7},   // an exponent needs a digit
           {"{\"a\":tru}", 8},  // literals spelt out
           {"{\"a\":[}", 6},    // brackets match
           {"{\"a\":[1}", 7},
           {"{\"a\":\"\x01\"}", 6},              // raw control character
           {"{\"a\":\"\\x\"}", 7},               // unknown escape
           {"{\"a\":\"\\u12G4\"}", 10},          // hex digits
           {"{\"a\":\"\xC0\xAF\"}", 6},          // overlong lead byte
           {"{\"a\":\"\xE0\x80\x80\"}", 7},      // overlong 3-byte form
           {"{\"a\":\"\xED\xA0\x80\"}", 7},      // a surrogate
           {"{\"a\":\"\xF4\x90\x80\x80\"}", 7},  // past U+10FFFF
           {"{\"a\":\"\xC3(\"}", 7},             // a missing continuation byte
           {"{} ", 2},                           // nothing after the object
           {"{}{}", 2},
           {"{\"a\":1 2}", 7},
       }) {
    EXPECT_EQ(AcceptedPrefix(c.text), c.accepted) << c.text;
  }
}

TEST(JsonGrammarTest, BoundsDepthAndWhitespace) {
  std::string deep = "{\"a\":";
  for (int i = 1; i < kJsonMaxDepth; ++i) deep += "[";
  EXPECT_EQ(AcceptedPrefix(deep), deep.size());
  EXPECT_EQ(AcceptedPrefix(deep + "["), deep.size());  // one level too deep
  std::string closed = deep;
  for (int i = 1; i < kJsonMaxDepth; ++i) closed += "]";
  EXPECT_TRUE(Complete(closed + "}"));
  const std::string ws(kJsonMaxIndent, ' ');
  EXPECT_EQ(AcceptedPrefix("{" + ws + "}"), ws.size() + 2);
  EXPECT_EQ(AcceptedPrefix("{" + ws + " }"), ws.size() + 1);
  EXPECT_TRUE(Complete("{\n" + ws + "}"));
  EXPECT_EQ(AcceptedPrefix("{\n\n}"), 2u);  // one newline per run
  EXPECT_EQ(AcceptedPrefix("{ \n}"), 2u);   // and first
  EXPECT_EQ(AcceptedPrefix("{\r\n}"), 1u);  // no carriage returns
  EXPECT_EQ(AcceptedPrefix("{\n\t\t\n}"), 4u);
  // A run ends at any other byte.
  EXPECT_TRUE(
      Complete("{" + ws + "\"a\"" + ws + ":\n" + ws + "1\n" + ws + "}"));
}

// A toy vocabulary: single bytes for everything JSON needs, some longer
// pieces, an empty (control) token and two end tokens.
std::vector<std::string> ToyPieces() {
  std::vector<std::string> p = {"", "</s>"};  // 0: control, 1: end (text)
  for (const char* s : {"{",         "}",    "[",    "]",        "\"",
                        ":",         ",",    " ",    "\n",       "a",
                        "b",         "1",    "0",    "-",        ".",
                        "e",         "t",    "r",    "u",        "f",
                        "l",         "s",    "n",    "\\",       "{\"",
                        "\":",       "\"}",  "true", "tr",       "null",
                        "12",        "1.",   "}}",   "]}",       "\":\"",
                        "ab\"",      "\xC3", "\xA9", "\xC3\xA9", "x\x01",
                        "\":\"\",\""}) {  // the last: from a key's inside back
                                          // to a key's inside
    p.push_back(s);
  }
  return p;
}

// The allowed set by brute force: each token's bytes from the state.
std::vector<bool> BruteForce(const std::vector<std::string>& pieces,
                             const JsonState& state,
                             const std::vector<int32_t>& ends) {
  std::vector<bool> ok(pieces.size(), false);
  for (size_t t = 0; t < pieces.size(); ++t) {
    const bool is_end = std::find(ends.begin(), ends.end(),
                                  static_cast<int32_t>(t)) != ends.end();
    if (JsonComplete(state)) {
      ok[t] = is_end;
    } else if (!is_end && !pieces[t].empty()) {
      JsonState s = state;
      ok[t] = JsonAdvance(&s, pieces[t]);
    }
  }
  return ok;
}

TEST(JsonConstraintTest, MaskMatchesBruteForceAlongRandomWalks) {
  const std::vector<std::string> pieces = ToyPieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const std::vector<int32_t> ends = {1, 0};
  std::mt19937 rng(5);
  for (int walk = 0; walk < 200; ++walk) {
    JsonConstraint c(vocab, ends);
    JsonState state;
    for (int step = 0; step < 40; ++step) {
      const std::vector<bool> want = BruteForce(pieces, state, ends);
      std::span<const uint64_t> mask = c.AllowedMask();
      std::vector<int32_t> allowed;
      for (size_t t = 0; t < pieces.size(); ++t) {
        const bool got = MaskHas(mask, t);
        ASSERT_EQ(got, want[t])
            << "walk " << walk << " step " << step << " token " << t;
        ASSERT_EQ(c.Allows(static_cast<int32_t>(t)), want[t]);
        if (got) allowed.push_back(static_cast<int32_t>(t));
      }
      ASSERT_FALSE(allowed.empty())
          << "dead end at walk " << walk << " step " << step;
      const int32_t t = allowed[rng() % allowed.size()];
      if (t == 0 || t == 1) {
        EXPECT_TRUE(c.complete());
        break;
      }
      c.Accept(t);
      ASSERT_TRUE(JsonAdvance(&state, pieces[t]));
      EXPECT_EQ(c.complete(), JsonComplete(state));
    }
  }
}

TEST(JsonConstraintTest, ARefusedTokenLeavesOnlyTheEnd) {
  auto vocab = std::make_shared<const VocabBytes>(ToyPieces());
  JsonConstraint c(vocab, {1});
  c.Accept(4);  // "}" before any "{"
  std::span<const uint64_t> mask = c.AllowedMask();
  for (int32_t t = 0; t < vocab->size(); ++t) {
    EXPECT_EQ(MaskHas(mask, t), t == 1) << t;
  }
}

int32_t PieceId(const std::vector<std::string>& pieces, std::string_view p) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i] == p) return static_cast<int32_t>(i);
  }
  return -1;
}

// Logits that favour text that is not JSON: greedy and sampled output are
// still one JSON object, and it ends with the end token.
TEST(JsonConstraintTest, SamplerOutputIsOneObject) {
  const std::vector<std::string> pieces = ToyPieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const int32_t n = static_cast<int32_t>(pieces.size());
  for (float temperature : {0.0f, 1.0f}) {
    for (int trial = 0; trial < (temperature == 0 ? 1 : 20); ++trial) {
      SamplingParams p;
      p.temperature = temperature;
      p.top_p = temperature == 0 ? 1.0f : 0.9f;
      p.seed = 100 + trial;
      p.json_object = true;
      p.json_end_tokens = {1};
      StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      std::mt19937 rng(trial);
      std::normal_distribution<float> normal(0.0f, 2.0f);
      std::string text;
      bool ended = false;
      for (int step = 0; step < 400 && !ended; ++step) {
        std::vector<float> logits(n);
        for (float& l : logits) l = normal(rng);
        // "a" first (the unconstrained favourite), then closers.
        const bool late = step > 30;
        logits[PieceId(pieces, "a")] += late ? 0 : 8;
        for (const char* closer : {"\"", "}", "]", "]}", "\"}", "</s>"}) {
          logits[PieceId(pieces, closer)] += late ? 8 : 0;
        }
        const int32_t t = s->Sample(logits).token;
        s->Accept(t);
        if (t == 1) {
          ended = true;
        } else {
          text += pieces[t];
          ASSERT_EQ(AcceptedPrefix(text), text.size()) << text;
        }
      }
      EXPECT_TRUE(ended) << text;
      EXPECT_TRUE(Complete(text)) << text;
    }
  }
}

// Processed logprobs see the mask on every step, also when the greedy
// argmax is allowed (no shortcut then).
TEST(JsonConstraintTest, ProcessedLogprobsAreMasked) {
  const std::vector<std::string> pieces = ToyPieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const int32_t n = static_cast<int32_t>(pieces.size());
  SamplingParams p;
  p.temperature = 0;
  p.json_object = true;
  p.json_end_tokens = {1};
  p.logprobs = 3;
  p.logprobs_mode = LogprobsMode::kProcessed;
  StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
  ASSERT_TRUE(s.ok());
  std::vector<float> logits(n, 0.0f);
  logits[PieceId(pieces, "{")] = 5;  // allowed, the argmax
  logits[PieceId(pieces, "a")] = 4;  // refused before the object opens
  const SampleResult r = s->Sample(logits);
  EXPECT_EQ(r.token, PieceId(pieces, "{"));
  for (const TokenLogprob& t : r.top_logprobs) {
    EXPECT_NE(t.token, PieceId(pieces, "a")) << "an unmasked alternative";
  }
}

TEST(JsonConstraintTest, NeedsTheVocabularyAndAnEndToken) {
  SamplingParams p;
  p.json_object = true;
  EXPECT_FALSE(p.Validate(10).ok());  // no end token
  p.json_end_tokens = {10};
  EXPECT_FALSE(p.Validate(10).ok());  // outside the vocabulary
  p.json_end_tokens = {1};
  ASSERT_TRUE(p.Validate(10).ok());
  EXPECT_EQ(Sampler::Create(p, 10).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::sampling
