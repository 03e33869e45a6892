// Structured output through the engine with the real ModelExecutor: a
// constrained request's tokens are the same alone and in a batch (greedy
// and seeded sampling, next to unconstrained requests), its output stays in
// the grammar, and a grammar that cannot continue ends the request as
// kLength without a token. Compiled with model_executor_test.cc for both
// models (WEFT_ENGINE_TEST_GEMMA selects Gemma 3 270M).
//
// The vocabulary's bytes are synthetic (each token stands for one of a few
// short pieces): the mask only needs some bytes per token, and the model's
// logits then choose among the allowed ones as they would with real text.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "sampling/grammar_cache.h"
#include "tests/engine/model_harness.h"
#include "tests/engine/test_model.h"

namespace weft::engine {
namespace {

using testing::DefaultSetup;
using testing::Job;
using testing::RandomPrompt;
using testing::RunJobs;
using testing::RunResult;
using testing::RunSetup;
using testing::kGemma;
using testing::kHi;
using testing::kLo;
using testing::LoadedModel;
using testing::ModelPath;

constexpr int kMaxTokens = kGemma ? 8 : 20;
constexpr TokenId kEnd = 1;  // the end token (no text)

// Tokens below kLo: no text; the rest cycle through a few pieces.
std::shared_ptr<const sampling::VocabBytes> SyntheticVocab(int64_t n_vocab) {
  const char* kPieces[] = {"a", "b", "ab", "c", "1", "-", "ba", "x"};
  std::vector<std::string> pieces(static_cast<size_t>(n_vocab));
  for (int64_t t = kLo; t < n_vocab; ++t) pieces[t] = kPieces[t % 8];
  return std::make_shared<const sampling::VocabBytes>(std::move(pieces));
}

sampling::StructuredOutput Regex(const std::string& pattern) {
  auto g = sampling::CompileConstraint(sampling::ConstraintKind::kRegex, pattern);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return {sampling::ConstraintKind::kRegex, g.ok() ? *g : nullptr};
}

std::string Text(const sampling::VocabBytes& vocab, const std::vector<TokenId>& tokens) {
  std::string text;
  for (TokenId t : tokens) {
    if (t != kEnd) text += vocab.piece(t);
  }
  return text;
}

#define REQUIRE_MODEL()                      \
  const model::Model* model = LoadedModel(); \
  if (model == nullptr) GTEST_SKIP() << "no " << ModelPath();

TEST(EngineConstrainedTest, ConstrainedAloneEqualsBatch) {
  REQUIRE_MODEL();
  RunSetup setup = DefaultSetup();
  setup.exec.vocab_bytes = SyntheticVocab(model->config().n_vocab);
  const sampling::StructuredOutput grammar = Regex("(ab|c)+(-[1x]{2,4})?");
  std::vector<Job> jobs;
  for (int i = 0; i < 8; ++i) {
    Job j;
    j.id = 500 + i;
    j.prompt = RandomPrompt(70 + i, 3 + 2 * i, kLo, kHi);
    j.max_tokens = kMaxTokens;
    j.stop_token_ids = {kEnd};
    j.sampling.temperature = i % 2 == 0 ? 0.0f : 0.8f;
    j.sampling.seed = 77 + i;
    if (i < 6) {  // two unconstrained requests share the batch
      j.sampling.structured = grammar;
      j.sampling.json_end_tokens = {kEnd};
    }
    jobs.push_back(std::move(j));
  }
  RunResult alone = RunJobs(*model, setup, jobs, /*concurrent=*/false);
  RunResult batch = RunJobs(*model, setup, jobs, /*concurrent=*/true);
  ASSERT_TRUE(alone.status.ok()) << alone.status.ToString();
  ASSERT_TRUE(batch.status.ok()) << batch.status.ToString();
  for (const Job& j : jobs) {
    const testing::Outcome& a = alone.outcomes[j.id];
    const testing::Outcome& b = batch.outcomes[j.id];
    EXPECT_EQ(b.tokens, a.tokens) << "request " << j.id;
    EXPECT_EQ(b.reason, a.reason) << "request " << j.id;
    if (j.sampling.structured.grammar == nullptr) continue;
    ASSERT_FALSE(a.tokens.empty());
    const std::string text = Text(*setup.exec.vocab_bytes, a.tokens);
    if (a.reason == FinishReason::kStop) {
      EXPECT_TRUE(grammar.grammar->Matches(text)) << j.id << ": " << text;
    } else {
      sampling::GrammarState s = grammar.grammar->Start();
      EXPECT_TRUE(grammar.grammar->Advance(&s, text)) << j.id << ": " << text;
    }
  }
  EXPECT_LT(batch.stats.num_steps, alone.stats.num_steps);
}

TEST(EngineConstrainedTest, GrammarThatCannotContinueEndsAsLength) {
  REQUIRE_MODEL();
  RunSetup setup = DefaultSetup();
  setup.exec.vocab_bytes = SyntheticVocab(model->config().n_vocab);
  Job stuck;  // "ab" then a byte no token has
  stuck.id = 1;
  stuck.prompt = RandomPrompt(5, 6, kLo, kHi);
  stuck.max_tokens = kMaxTokens;
  stuck.stop_token_ids = {kEnd};
  stuck.sampling.temperature = 0;
  stuck.sampling.structured = Regex("abq");
  stuck.sampling.json_end_tokens = {kEnd};
  Job never = stuck;  // nothing can come first
  never.id = 2;
  never.sampling.structured = Regex("q");
  RunResult r = RunJobs(*model, setup, {stuck, never}, /*concurrent=*/true);
  ASSERT_TRUE(r.status.ok()) << r.status.ToString();
  EXPECT_EQ(r.outcomes[1].reason, FinishReason::kLength);
  EXPECT_EQ(r.outcomes[1].num_finishes, 1);
  EXPECT_LE(Text(*setup.exec.vocab_bytes, r.outcomes[1].tokens).size(), 2u);
  EXPECT_EQ(r.outcomes[2].reason, FinishReason::kLength);
  EXPECT_TRUE(r.outcomes[2].tokens.empty());
}

TEST(EngineConstrainedTest, RefusedWithoutVocabularyBytes) {
  REQUIRE_MODEL();
  Job j;
  j.id = 1;
  j.prompt = RandomPrompt(5, 4, kLo, kHi);
  j.stop_token_ids = {kEnd};
  j.sampling.structured = Regex("a+");
  j.sampling.json_end_tokens = {kEnd};
  RunResult r = RunJobs(*model, DefaultSetup(), {j}, /*concurrent=*/false);
  EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::engine
