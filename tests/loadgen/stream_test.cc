#include "loadgen/stream.h"

#include <gtest/gtest.h>

#include <string>

namespace weft::loadgen {
namespace {

std::string Chunk(const std::string& text) {
  return "data: {\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"choices\":"
         "[{\"index\":0,\"text\":\"" + text + "\",\"finish_reason\":null}],"
         "\"usage\":null}\n\n";
}
std::string Usage(int prompt, int completion) {
  return "data: {\"id\":\"cmpl-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":" +
         std::to_string(prompt) + ",\"completion_tokens\":" +
         std::to_string(completion) + ",\"total_tokens\":" +
         std::to_string(prompt + completion) + "}}\n\n";
}
const char kDone[] = "data: [DONE]\n\n";

TEST(StreamTest, TtftItlE2eAndUsage) {
  RequestResult r;
  r.sent_at = 10.0;
  StreamAccumulator acc(&r);
  acc.OnBytes(Chunk("a"), 10.5);
  acc.OnBytes(Chunk("b"), 10.6);
  acc.OnBytes(Chunk("c") + Chunk("d"), 10.9);  // two chunks in one read
  acc.OnBytes(Usage(7, 4), 10.9);
  acc.OnBytes(kDone, 10.95);
  acc.OnEnd(11.0);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.ttft, 0.5);
  EXPECT_DOUBLE_EQ(r.e2e, 1.0);
  ASSERT_EQ(r.itl.size(), 3u);
  EXPECT_NEAR(r.itl[0], 0.1, 1e-12);
  EXPECT_NEAR(r.itl[1], 0.3, 1e-12);
  EXPECT_NEAR(r.itl[2], 0.0, 1e-12);
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_EQ(r.prompt_tokens, 7);
  EXPECT_TRUE(r.usage_seen);
  ASSERT_TRUE(r.tpot().has_value());
  EXPECT_NEAR(*r.tpot(), 0.5 / 3, 1e-12);
}

TEST(StreamTest, LogprobsCountTokensInAChunk) {
  RequestResult r;
  StreamAccumulator acc(&r);
  acc.OnBytes(Chunk("x"), 1.0);
  // One chunk carrying three tokens (listed in logprobs), 0.3 s later.
  acc.OnBytes(
      "data: {\"choices\":[{\"index\":0,\"text\":\"abc\",\"logprobs\":"
      "{\"tokens\":[\"a\",\"b\",\"c\"],\"token_logprobs\":[0,0,0]}}]}\n\n",
      1.3);
  acc.OnBytes(kDone, 1.4);
  acc.OnEnd(1.4);
  ASSERT_TRUE(r.ok()) << r.error;
  ASSERT_EQ(r.itl.size(), 3u);
  for (double g : r.itl) EXPECT_NEAR(g, 0.1, 1e-12);
  EXPECT_FALSE(r.usage_seen);
  EXPECT_EQ(r.output_tokens, 4);  // counted
  ASSERT_EQ(r.chunk_tokens.size(), 2u);
  EXPECT_EQ(r.chunk_tokens[1], 3);
}

TEST(StreamTest, ContinuousUsageCountsTokensPerChunk) {
  RequestResult r;
  StreamAccumulator acc(&r);
  auto chunk = [](const char* text, int total) {
    return std::string("data: {\"choices\":[{\"index\":0,\"text\":\"") + text +
           "\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":" +
           std::to_string(total) + "}}\n\n";
  };
  acc.OnBytes(chunk("a", 1), 0.2);
  acc.OnBytes(chunk("bc", 3), 0.4);  // two tokens
  acc.OnBytes(kDone, 0.5);
  acc.OnEnd(0.5);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.itl.size(), 2u);
  EXPECT_NEAR(r.itl[0], 0.1, 1e-12);
  EXPECT_EQ(r.output_tokens, 3);
}

TEST(StreamTest, ChatRoleChunkIsNotAToken) {
  RequestResult r;
  StreamAccumulator acc(&r);
  acc.OnBytes("data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n", 0.1);
  acc.OnBytes("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n", 0.4);
  acc.OnBytes("data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n", 0.5);
  acc.OnBytes(kDone, 0.5);
  acc.OnEnd(0.6);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_DOUBLE_EQ(r.ttft, 0.4);
  EXPECT_EQ(r.output_tokens, 1);
  EXPECT_EQ(r.finish_reason, "length");
  EXPECT_FALSE(r.tpot().has_value());
}

TEST(StreamTest, ErrorEventFailsTheRequest) {
  RequestResult r;
  StreamAccumulator acc(&r);
  acc.OnBytes(Chunk("a"), 0.1);
  acc.OnBytes("data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n", 0.2);
  acc.OnBytes(kDone, 0.3);
  acc.OnEnd(0.3);
  EXPECT_EQ(r.failure, FailureKind::kStreamError);
  EXPECT_EQ(r.error, "boom");
  EXPECT_STREQ(FailureKindName(r.failure), "stream_error");
}

TEST(StreamTest, InvalidStreams) {
  {
    RequestResult r;
    StreamAccumulator acc(&r);
    acc.OnBytes("data: {not json\n\n", 0.1);
    acc.OnEnd(0.2);
    EXPECT_EQ(r.failure, FailureKind::kInvalidStream);
  }
  {
    RequestResult r;  // no [DONE]
    StreamAccumulator acc(&r);
    acc.OnBytes(Chunk("a"), 0.1);
    acc.OnEnd(0.2);
    EXPECT_EQ(r.failure, FailureKind::kInvalidStream);
    EXPECT_NE(r.error.find("[DONE]"), std::string::npos);
  }
  {
    RequestResult r;  // no content at all
    StreamAccumulator acc(&r);
    acc.OnBytes(kDone, 0.1);
    acc.OnEnd(0.2);
    EXPECT_EQ(r.failure, FailureKind::kInvalidStream);
  }
}

TEST(StreamTest, FirstFailureWins) {
  RequestResult r;
  StreamAccumulator acc(&r);
  acc.Fail(FailureKind::kTimeout, "read: timeout", 5.0);
  acc.Fail(FailureKind::kConnection, "later", 6.0);
  acc.OnBytes(Chunk("a"), 7.0);
  EXPECT_EQ(r.failure, FailureKind::kTimeout);
  EXPECT_DOUBLE_EQ(r.e2e, 5.0);
  EXPECT_TRUE(r.chunk_at.empty());
}

TEST(StreamTest, SplitChunkAcrossReads) {
  RequestResult r;
  StreamAccumulator acc(&r);
  const std::string c = Chunk("hello");
  acc.OnBytes(c.substr(0, 20), 0.1);  // incomplete: no token yet
  EXPECT_TRUE(r.chunk_at.empty());
  acc.OnBytes(c.substr(20), 0.25);
  ASSERT_EQ(r.chunk_at.size(), 1u);
  EXPECT_DOUBLE_EQ(r.ttft, 0.25);  // when the last byte arrived
}

}  // namespace
}  // namespace weft::loadgen
