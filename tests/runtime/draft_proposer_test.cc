// DraftProposer on stories260K: its guesses are the draft's greedy
// continuation; its KV follows the sequence (catch-up of unseen tokens,
// rollback of rejected guesses: the held tokens and the table's length
// after each call, and which forwards it times as catch-up and which as
// guesses); batching and chunking change no guess; a sequence
// without room gets none; Release returns the blocks. And the vocabulary
// check.
#include "runtime/draft_proposer.h"

#include <gtest/gtest.h>

#include <vector>

#include "runtime/engine_builder.h"
#include "tests/engine/model_harness.h"
#include "tests/runtime/draft_models.h"

namespace weft::runtime {
namespace {

using engine::ProposeRequest;
using engine::RequestId;
using engine::TokenId;

// `n` random stories260K token ids (plain pieces, 3..499).
std::vector<TokenId> Tokens(uint64_t seed, int n) {
  return engine::testing::RandomPrompt(seed, n, 3, 500, /*salt=*/1);
}

DraftProposerConfig Config() {
  DraftProposerConfig c;
  c.num_blocks = 64;
  c.block_size = 4;
  c.kv_type = model::KvType::kF32;
  c.num_threads = 2;
  return c;
}

class DraftProposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = testing::LoadShared(testing::StoriesPath());
    ASSERT_NE(model_, nullptr);
  }
  std::unique_ptr<DraftProposer> Make(DraftProposerConfig c = Config()) {
    auto p = DraftProposer::Create(model_, c);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(*p) : nullptr;
  }
  // One sequence's guesses.
  static std::vector<TokenId> One(DraftProposer* p, RequestId id,
                                  const std::vector<TokenId>& tokens, int k) {
    std::vector<std::vector<TokenId>> out;
    const ProposeRequest r{id, tokens, k};
    p->ProposeBatch({&r, 1}, &out);
    return out.at(0);
  }
  // The held tokens of `id`, as a vector.
  static std::vector<TokenId> Held(const DraftProposer& p, RequestId id) {
    const auto h = p.held(id);
    return std::vector<TokenId>(h.begin(), h.end());
  }
  static std::vector<TokenId> Cat(std::vector<TokenId> a,
                                  const std::vector<TokenId>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  std::shared_ptr<const model::Model> model_;
};

TEST_F(DraftProposerTest, GuessesAreTheDraftsGreedyContinuation) {
  auto p = Make();
  const std::vector<TokenId> t = Tokens(1, 17);
  const std::vector<TokenId> d = One(p.get(), 1, t, 5);
  ASSERT_EQ(d.size(), 5u);
  // Guess a + 1 is what a fresh proposer's first guess after t + d[0, a)
  // is (one forward over the whole prefix).
  for (size_t a = 0; a < d.size(); ++a) {
    auto fresh = Make();
    std::vector<TokenId> prefix = t;
    prefix.insert(prefix.end(), d.begin(), d.begin() + long(a));
    EXPECT_EQ(One(fresh.get(), 9, prefix, 1), std::vector<TokenId>{d[a]}) << a;
  }
}

TEST_F(DraftProposerTest, CatchUpAndRollbackFollowTheSequence) {
  auto p = Make();
  const std::vector<TokenId> t = Tokens(2, 20);
  const std::vector<TokenId> d = One(p.get(), 1, t, 4);
  ASSERT_EQ(d.size(), 4u);
  // Its KV holds the tokens and the guesses fed back (not the last).
  EXPECT_EQ(Held(*p, 1), Cat(t, {d[0], d[1], d[2]}));
  EXPECT_EQ(p->kv().Table(1)->num_tokens, 23);
  EXPECT_EQ(p->stats().catchup_tokens, 20);
  EXPECT_EQ(p->stats().step_tokens, 3);
  // Timing: the prompt's forward is catch-up, the 3 after it guess forwards.
  EXPECT_GT(p->last_timing().catchup_ms, 0);
  EXPECT_EQ(p->last_timing().guess_steps, 3);

  // The target accepted d[0] and then sampled another token: the KV of
  // d[1], d[2] is rolled back, only the new token is fed.
  const TokenId x = d[1] == 5 ? 6 : 5;
  const std::vector<TokenId> t2 = Cat(t, {d[0], x});
  const std::vector<TokenId> e = One(p.get(), 1, t2, 3);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(p->stats().rolled_back, 2);
  EXPECT_EQ(p->stats().catchup_tokens, 21);
  EXPECT_EQ(Held(*p, 1), Cat(t2, {e[0], e[1]}));
  EXPECT_EQ(p->kv().Table(1)->num_tokens, 24);
  // Only the last token fed: every forward was a guess forward.
  EXPECT_EQ(p->last_timing().catchup_ms, 0);
  EXPECT_EQ(p->last_timing().guess_steps, 3);
  {
    auto fresh = Make();
    EXPECT_EQ(One(fresh.get(), 1, t2, 3), e);  // the rolled-back KV is gone
  }

  // Every guess accepted plus a bonus token: nothing to roll back; the
  // last guess (never fed) and the bonus are caught up.
  const std::vector<TokenId> t3 = Cat(t2, {e[0], e[1], e[2], 7});
  const std::vector<TokenId> f = One(p.get(), 1, t3, 2);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(p->stats().rolled_back, 2);
  EXPECT_EQ(p->stats().catchup_tokens, 23);
  EXPECT_EQ(Held(*p, 1), Cat(t3, {f[0]}));
  EXPECT_GT(p->last_timing().catchup_ms, 0);  // 2 tokens: catch-up
  EXPECT_EQ(p->last_timing().guess_steps, 1);
  {
    auto fresh = Make();
    EXPECT_EQ(One(fresh.get(), 1, t3, 2), f);
  }

  // Unchanged tokens (the target verified nothing): the held guess past
  // them goes, the last token is fed again for its logits.
  EXPECT_EQ(One(p.get(), 1, t3, 2), f);
  EXPECT_EQ(Held(*p, 1), Cat(t3, {f[0]}));
  EXPECT_EQ(p->last_timing().guess_steps, 2);
  EXPECT_TRUE(p->kv().CheckInvariants().ok());
}

TEST_F(DraftProposerTest, BatchedAndChunkedEqualOneByOne) {
  const std::vector<std::vector<TokenId>> seqs = {Tokens(3, 9), Tokens(4, 30),
                                                  Tokens(5, 2), Tokens(6, 13)};
  const std::vector<int> ks = {3, 1, 4, 2};
  std::vector<std::vector<TokenId>> want;
  {
    auto p = Make();
    for (size_t i = 0; i < seqs.size(); ++i) {
      want.push_back(One(p.get(), RequestId(i), seqs[i], ks[i]));
    }
  }
  for (int chunk : {256, 7, 1}) {
    SCOPED_TRACE(chunk);
    DraftProposerConfig c = Config();
    c.prefill_chunk = chunk;
    auto p = Make(c);
    std::vector<ProposeRequest> reqs;
    for (size_t i = 0; i < seqs.size(); ++i) {
      reqs.push_back({RequestId(i), seqs[i], ks[i]});
    }
    std::vector<std::vector<TokenId>> out;
    p->ProposeBatch(reqs, &out);
    EXPECT_EQ(out, want);
    if (chunk == 256) {
      // One catch-up forward, then one per further guess of the longest k.
      EXPECT_EQ(p->stats().forwards, 1 + 3);
    }
  }
}

TEST_F(DraftProposerTest, NoRoomMeansNoGuessesAndReleaseFreesTheKv) {
  DraftProposerConfig c = Config();
  c.num_blocks = 3;  // 12 tokens
  auto p = Make(c);
  std::vector<std::vector<TokenId>> out;
  const std::vector<TokenId> big = Tokens(7, 20), small = Tokens(8, 5);
  const std::vector<ProposeRequest> reqs = {{1, big, 4}, {2, small, 3}};
  p->ProposeBatch(reqs, &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].empty());
  EXPECT_EQ(out[1].size(), 3u);
  EXPECT_EQ(p->stats().no_room, 1);
  EXPECT_TRUE(p->held(1).empty());
  EXPECT_FALSE(p->kv().Has(1));
  EXPECT_EQ(p->kv().stats().num_used, 2);  // 5 + 2 tokens
  p->Release(2);
  p->Release(3);  // unknown: no-op
  EXPECT_EQ(p->kv().stats().num_used, 0);
  EXPECT_EQ(p->kv().stats().num_free, 3);
  EXPECT_TRUE(p->held(2).empty());
}

TEST(CheckSameVocabularyTest, NamesTheFirstDifference) {
  tokenizer::Vocab a;
  a.tokens = {"<s>", "</s>", "a", "b"};
  a.bos = 0;
  a.eos = 1;
  tokenizer::Vocab b = a;
  EXPECT_TRUE(CheckSameVocabulary(a, b).ok());
  b.tokens[2] = "c";
  Status st = CheckSameVocabulary(a, b);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("token 2 is 'c' in the draft model and 'a'"),
            std::string::npos)
      << st.message();
  b = a;
  b.tokens.push_back("d");
  st = CheckSameVocabulary(a, b);
  EXPECT_NE(st.message().find("has 5 tokens, the target's 4"),
            std::string::npos)
      << st.message();
  b = a;
  b.eos = 3;
  EXPECT_FALSE(CheckSameVocabulary(a, b).ok());
}

// BuildBackend with --spec draft: the draft's path and KV in the engine's
// settings; another vocabulary, a missing file or no file are errors that
// name the draft model.
TEST(BuildBackendWithDraft, ChecksTheDraftAndReportsIt) {
  EngineConfig c;
  c.model_path = testing::StoriesPath();
  c.threads = 1;
  c.scheduler.max_model_len = 0;
  c.scheduler.spec_method = engine::SpecMethod::kDraft;
  c.draft_model_path = testing::WriteDraftModel("same_vocab.gguf");
  EngineSummary s;
  auto b = BuildBackend(c, &s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->engine_info().spec_method, "draft");
  EXPECT_EQ((*b)->engine_info().draft_model, c.draft_model_path);
  EXPECT_EQ((*b)->engine_info().draft_kv_blocks, s.kv_blocks);
  EXPECT_EQ(s.draft_kv_blocks, s.kv_blocks);
  EXPECT_GT(s.draft_kv_bytes, 0u);
  EXPECT_FALSE(s.draft_model.empty());
  (*b)->StartDraining();

  c.draft_kv_blocks = 9;
  b = BuildBackend(c, &s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->engine_info().draft_kv_blocks, 9);
  (*b)->StartDraining();

  c.draft_model_path = testing::WriteDraftModel(
      "other_vocab.gguf",
      [](std::vector<std::string>* t) { (*t)[100] = "zz"; });
  b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("draft model " + c.draft_model_path +
                                      ": token 100 is 'zz' in the draft"),
            std::string::npos)
      << b.status().message();

  c.draft_model_path = testing::WriteDraftModel(
      "more_vocab.gguf",
      [](std::vector<std::string>* t) { t->push_back("<draft-only>"); });
  b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("513 tokens, the target's 512"),
            std::string::npos)
      << b.status().message();

  c.draft_model_path = "/nonexistent/draft.gguf";
  b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("draft model /nonexistent/draft.gguf"),
            std::string::npos)
      << b.status().message();

  c.draft_model_path.clear();
  b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace weft::runtime
