#include "loadgen/workload.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace weft::loadgen {
namespace {

// Bytes as tokens with a BOS (like the server's FakeBackend).
class ByteTokenizer : public TokenizerClient {
 public:
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& text) override {
    calls++;
    std::vector<int32_t> ids = {1};
    for (unsigned char c : text) ids.push_back(c + 3);
    return ids;
  }
  int calls = 0;
};

// Whitespace-separated words as tokens, each word hashed; punctuation
// characters are separate tokens. No BOS.
class WordTokenizer : public TokenizerClient {
 public:
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& text) override {
    std::vector<int32_t> ids;
    std::string word;
    auto flush = [&] {
      if (!word.empty()) ids.push_back(static_cast<int32_t>(std::hash<std::string>()(word) % 30000));
      word.clear();
    };
    for (char c : text) {
      if (c == ' ' || c == '\n') {
        flush();
      } else if (c == '.' || c == ',') {
        flush();
        ids.push_back(c);
      } else {
        word.push_back(c);
      }
    }
    flush();
    return ids;
  }
};

int64_t Count(TokenizerClient& t, const Prompt& p) {
  if (!p.ids.empty()) return static_cast<int64_t>(p.ids.size());
  return static_cast<int64_t>(t.Tokenize(p.text)->size());
}

TEST(WorkloadTest, S1TokenIdsAreExactAndDistinct) {
  ByteTokenizer tok;
  WorkloadParams p = DefaultParams(WorkloadKind::kS1);
  StatusOr<WorkloadPlan> plan = BuildWorkload(p, &tok, 20, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->requests.size(), 20u);
  std::set<std::vector<int32_t>> distinct;
  for (const PlannedRequest& r : plan->requests) {
    EXPECT_EQ(r.prompt.ids.size(), 256u);
    EXPECT_EQ(r.prompt.tokens, 256);
    EXPECT_EQ(r.prompt.ids[0], 1);  // the BOS that "" tokenizes to
    EXPECT_EQ(r.max_tokens, 128);
    EXPECT_EQ(r.group, "");
    distinct.insert(r.prompt.ids);
  }
  EXPECT_EQ(distinct.size(), 20u);
  EXPECT_EQ(tok.calls, 2);  // "" and the corpus, nothing per prompt
}

// S6: S1's plan with the guide's long distinct prompts and 256 tokens out.
TEST(WorkloadTest, S6IsS1WithLongPrompts) {
  ByteTokenizer tok;
  WorkloadParams p = DefaultParams(WorkloadKind::kS6);
  EXPECT_STREQ(WorkloadName(p.kind), "S6");
  StatusOr<WorkloadPlan> plan = BuildWorkload(p, &tok, 6, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->requests.size(), 6u);
  std::set<std::vector<int32_t>> distinct;
  for (const PlannedRequest& r : plan->requests) {
    EXPECT_EQ(r.prompt.ids.size(), 1500u);
    EXPECT_EQ(r.max_tokens, 256);
    distinct.insert(r.prompt.ids);
  }
  EXPECT_EQ(distinct.size(), 6u);
}

TEST(WorkloadTest, TextPromptsAreExactForBothTokenizers) {
  ByteTokenizer bytes;
  WordTokenizer words;
  for (TokenizerClient* tok : {static_cast<TokenizerClient*>(&bytes),
                               static_cast<TokenizerClient*>(&words)}) {
    WorkloadParams p = DefaultParams(WorkloadKind::kS1);
    p.prompt_tokens = 97;
    StatusOr<WorkloadPlan> plan = BuildWorkload(p, tok, 5, true);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    for (const PlannedRequest& r : plan->requests) {
      EXPECT_TRUE(r.prompt.ids.empty());
      EXPECT_EQ(Count(*tok, r.prompt), 97) << r.prompt.text;
    }
  }
}

TEST(WorkloadTest, S2BackgroundAndLongRequests) {
  ByteTokenizer tok;
  StatusOr<WorkloadPlan> plan = BuildWorkload(DefaultParams(WorkloadKind::kS2), &tok, 8, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->requests.size(), 8u);
  for (const PlannedRequest& r : plan->requests) {
    EXPECT_EQ(r.prompt.ids.size(), 64u);
    EXPECT_EQ(r.max_tokens, 512);
    EXPECT_EQ(r.group, "background");
  }
  ASSERT_EQ(plan->long_requests.size(), 3u);
  for (const PlannedRequest& r : plan->long_requests) {
    EXPECT_EQ(r.prompt.ids.size(), 2048u);
    EXPECT_EQ(r.group, "long");
  }
}

TEST(WorkloadTest, S3LengthsInRangeAndSpread) {
  ByteTokenizer tok;
  StatusOr<WorkloadPlan> plan = BuildWorkload(DefaultParams(WorkloadKind::kS3), &tok, 400, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::vector<int64_t> lens;
  for (const PlannedRequest& r : plan->requests) {
    EXPECT_GE(r.prompt.tokens, 32);
    EXPECT_LE(r.prompt.tokens, 1024);
    EXPECT_EQ(static_cast<int64_t>(r.prompt.ids.size()), r.prompt.tokens);
    EXPECT_GE(r.max_tokens, 16);
    EXPECT_LE(r.max_tokens, 256);
    lens.push_back(r.prompt.tokens);
  }
  std::sort(lens.begin(), lens.end());
  // Log-uniform in 32..1024: the median is near sqrt(32*1024) = 181.
  EXPECT_GT(lens[lens.size() / 2], 120);
  EXPECT_LT(lens[lens.size() / 2], 270);
}

TEST(WorkloadTest, S4SharesFourPrefixes) {
  ByteTokenizer tok;
  StatusOr<WorkloadPlan> plan = BuildWorkload(DefaultParams(WorkloadKind::kS4), &tok, 1, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->requests.size(), 64u);
  std::set<std::vector<int32_t>> prefixes, whole;
  for (const PlannedRequest& r : plan->requests) {
    ASSERT_EQ(r.prompt.ids.size(), 1024u + 32u);
    EXPECT_EQ(r.max_tokens, 32);
    prefixes.insert(std::vector<int32_t>(r.prompt.ids.begin(), r.prompt.ids.begin() + 1024));
    whole.insert(r.prompt.ids);
  }
  EXPECT_EQ(prefixes.size(), 4u);
  EXPECT_EQ(whole.size(), 64u);
}

TEST(WorkloadTest, S4TextModeKeepsThePrefix) {
  ByteTokenizer tok;
  WorkloadParams p = DefaultParams(WorkloadKind::kS4);
  p.system_tokens = 100;
  p.shared_requests = 8;
  StatusOr<WorkloadPlan> plan = BuildWorkload(p, &tok, 1, true);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::set<std::string> prefixes;
  for (const PlannedRequest& r : plan->requests) {
    EXPECT_EQ(Count(tok, r.prompt), 132);
    prefixes.insert(r.prompt.text.substr(0, 99));  // 100 tokens = BOS + 99 bytes
  }
  EXPECT_EQ(prefixes.size(), 4u);
}

TEST(FitTextTest, ExactOrError) {
  ByteTokenizer tok;
  TokenCounter count = [&](const std::string& s) -> StatusOr<int64_t> {
    return static_cast<int64_t>(tok.Tokenize(s)->size());
  };
  std::vector<std::string> words = CorpusWords(3, 50);
  for (int64_t target : {1, 2, 5, 17, 64}) {
    StatusOr<std::string> t = FitText(count, "", words, target);
    ASSERT_TRUE(t.ok()) << target << ": " << t.status().ToString();
    EXPECT_EQ(*count(*t), target);
  }
  StatusOr<std::string> with_base = FitText(count, "fixed part", words, 40);
  ASSERT_TRUE(with_base.ok());
  EXPECT_EQ(with_base->substr(0, 10), "fixed part");
  EXPECT_EQ(*count(*with_base), 40);
  EXPECT_FALSE(FitText(count, "a long fixed part", words, 5).ok());
  EXPECT_FALSE(FitText(count, "", std::vector<std::string>{"a", "b"}, 100).ok());
}

TEST(PromptFileTest, ParsesTextAndIds) {
  StatusOr<std::vector<PlannedRequest>> r = ParsePromptFile(
      "# comment\n"
      "{\"prompt\": \"hello\", \"max_tokens\": 5}\n"
      "\n"
      "{\"prompt\": [1, 2, 3]}\r\n",
      64);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ((*r)[0].prompt.text, "hello");
  EXPECT_EQ((*r)[0].max_tokens, 5);
  EXPECT_EQ((*r)[1].prompt.ids, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ((*r)[1].prompt.tokens, 3);
  EXPECT_EQ((*r)[1].max_tokens, 64);
}

TEST(PromptFileTest, RejectsBadLines) {
  EXPECT_FALSE(ParsePromptFile("", 8).ok());
  EXPECT_FALSE(ParsePromptFile("not json\n", 8).ok());
  EXPECT_FALSE(ParsePromptFile("{\"max_tokens\": 3}\n", 8).ok());
  EXPECT_FALSE(ParsePromptFile("{\"prompt\": \"x\", \"max_tokens\": 0}\n", 8).ok());
  EXPECT_FALSE(ParsePromptFile("{\"prompt\": [1, \"a\"]}\n", 8).ok());
  EXPECT_FALSE(ParsePromptFile("{\"prompt\": \"\"}\n", 8).ok());
  EXPECT_FALSE(ParsePromptFile("[1]\n", 8).ok());
}

}  // namespace
}  // namespace weft::loadgen
