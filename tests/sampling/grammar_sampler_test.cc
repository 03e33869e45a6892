// The Sampler with a structured-output constraint (params.structured):
// output stays in the grammar, end tokens only when it is complete, the
// greedy argmax shortcut picks what the full mask would, and a grammar that
// cannot continue is reported as exhausted (never unconstrained output).
#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sampling/grammar_cache.h"
#include "sampling/sampler.h"

namespace weft::sampling {
namespace {

// Token 0 is the end token (no text); then single characters and pairs.
std::vector<std::string> Pieces() {
  std::vector<std::string> pieces = {"", "a", "b", "c", "x", "-", "1", "2"};
  for (const char* p : {"ab", "ba", "abc", "x-", "12", "hello", "zz"}) pieces.push_back(p);
  return pieces;
}

SamplingParams Structured(ConstraintKind kind, const std::string& spec) {
  SamplingParams p;
  StatusOr<std::shared_ptr<const Grammar>> g = CompileConstraint(kind, spec);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  if (g.ok()) p.structured = {kind, *g};
  p.json_end_tokens = {0};
  return p;
}

// Samples until the end token (or `steps`), favouring off-grammar tokens.
std::string SampleText(Sampler* s, const std::vector<std::string>& pieces, int seed, bool* ended,
                bool* exhausted) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::string text;
  *ended = *exhausted = false;
  for (int step = 0; step < 64; ++step) {
    std::vector<float> logits(pieces.size());
    for (float& l : logits) l = normal(rng);
    logits[13] += 6;  // "hello": never allowed
    const SampleResult r = s->Sample(logits);
    if (r.exhausted) {
      EXPECT_EQ(r.token, -1);
      *exhausted = true;
      break;
    }
    s->Accept(r.token);
    if (r.token == 0) {
      *ended = true;
      break;
    }
    text += pieces[r.token];
  }
  return text;
}

TEST(GrammarSamplerTest, OutputMatchesRegexGreedyAndSampled) {
  const std::vector<std::string> pieces = Pieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const int32_t n = static_cast<int32_t>(pieces.size());
  auto g = CompileConstraint(ConstraintKind::kRegex, "(ab|c)+x-[12]{2}");
  ASSERT_TRUE(g.ok());
  for (float temperature : {0.0f, 0.8f}) {
    for (int seed = 0; seed < (temperature == 0 ? 3 : 20); ++seed) {
      SamplingParams p = Structured(ConstraintKind::kRegex, "(ab|c)+x-[12]{2}");
      p.temperature = temperature;
      p.seed = seed;
      StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
      ASSERT_TRUE(s.ok()) << s.status().ToString();
      bool ended, exhausted;
      const std::string text = SampleText(&*s, pieces, seed, &ended, &exhausted);
      EXPECT_TRUE(ended) << text;
      EXPECT_FALSE(exhausted) << text;
      EXPECT_TRUE((*g)->Matches(text)) << text;
    }
  }
}

TEST(GrammarSamplerTest, ChoiceEndsOnlyWhenComplete) {
  const std::vector<std::string> pieces = Pieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  SamplingParams p = Structured(ConstraintKind::kChoice, R"(["abc", "x-12"])");
  p.temperature = 0;
  StatusOr<Sampler> s = Sampler::Create(p, static_cast<int32_t>(pieces.size()), vocab);
  ASSERT_TRUE(s.ok());
  // The end token is the favourite at every step: refused until complete.
  std::vector<float> logits(pieces.size(), 0.0f);
  logits[0] = 10;
  logits[4] = 1;  // "x"
  std::string text;
  for (int step = 0; step < 8; ++step) {
    const SampleResult r = s->Sample(logits);
    ASSERT_FALSE(r.exhausted);
    s->Accept(r.token);
    if (r.token == 0) break;
    text += pieces[r.token];
  }
  EXPECT_TRUE(text == "abc" || text == "x-12") << text;
}

// The greedy shortcut (argmax allowed: no mask) and the masked path agree
// with a brute-force masked argmax.
TEST(GrammarSamplerTest, GreedyEqualsMaskedArgmax) {
  const std::vector<std::string> pieces = Pieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const int32_t n = static_cast<int32_t>(pieces.size());
  SamplingParams p = Structured(ConstraintKind::kRegex, "[abc]+(x-)?1");
  p.temperature = 0;
  StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
  GrammarConstraint ref(p.structured.grammar, vocab, {0});
  ASSERT_TRUE(s.ok());
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (int step = 0; step < 12; ++step) {
    std::vector<float> logits(n);
    for (float& l : logits) l = normal(rng);
    int32_t want = -1;
    for (int32_t t = 0; t < n; ++t) {
      if (ref.Allows(t) && (want < 0 || logits[t] > logits[want])) want = t;
    }
    const SampleResult r = s->Sample(logits);
    ASSERT_EQ(r.token, want) << "step " << step;
    if (want == 0) break;
    s->Accept(r.token);
    ref.Accept(want);
  }
}

TEST(GrammarSamplerTest, NoPossibleTokenIsExhaustedNotUnconstrained) {
  const std::vector<std::string> pieces = Pieces();
  auto vocab = std::make_shared<const VocabBytes>(pieces);
  const int32_t n = static_cast<int32_t>(pieces.size());
  for (float temperature : {0.0f, 1.0f}) {
    // No piece starts with "q": nothing can come first.
    SamplingParams p = Structured(ConstraintKind::kRegex, "q[ab]+");
    p.temperature = temperature;
    p.seed = 1;
    StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
    ASSERT_TRUE(s.ok());
    const SampleResult r = s->Sample(std::vector<float>(n, 0.0f));
    EXPECT_TRUE(r.exhausted);
    EXPECT_EQ(r.token, -1);
  }
  // "ab" then a byte no piece has: stuck after two tokens.
  SamplingParams p = Structured(ConstraintKind::kRegex, "abq");
  p.temperature = 0;
  StatusOr<Sampler> s = Sampler::Create(p, n, vocab);
  ASSERT_TRUE(s.ok());
  const SampleResult first = s->Sample(std::vector<float>(n, 0.0f));
  ASSERT_FALSE(first.exhausted);
  s->Accept(first.token);
  bool exhausted = false;
  for (int step = 0; step < 3 && !exhausted; ++step) {
    const SampleResult r = s->Sample(std::vector<float>(n, 0.0f));
    exhausted = r.exhausted;
    if (!exhausted) s->Accept(r.token);
  }
  EXPECT_TRUE(exhausted);
}

TEST(GrammarSamplerTest, ValidateNeedsEndTokensVocabAndOneConstraint) {
  SamplingParams p = Structured(ConstraintKind::kRegex, "a+");
  ASSERT_TRUE(p.Validate(16).ok());
  EXPECT_TRUE(p.constrained());
  EXPECT_NE(p.DebugString().find("structured=regex"), std::string::npos);
  EXPECT_EQ(Sampler::Create(p, 16).status().code(), StatusCode::kInvalidArgument);
  SamplingParams both = p;
  both.json_object = true;
  EXPECT_FALSE(both.Validate(16).ok());
  SamplingParams no_end = p;
  no_end.json_end_tokens.clear();
  EXPECT_FALSE(no_end.Validate(16).ok());
}

}  // namespace
}  // namespace weft::sampling
