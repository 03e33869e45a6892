#include "loadgen/sse.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weft::loadgen {
namespace {

std::vector<SseEvent> FeedInPieces(const std::string& body,
                                   const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<SseEvent> out;
  size_t from = 0;
  for (size_t cut : cuts) {
    p.Feed(std::string_view(body).substr(from, cut - from), &out);
    from = cut;
  }
  p.Feed(std::string_view(body).substr(from), &out);
  p.Finish(&out);
  return out;
}

const char kBody[] =
    "data: {\"a\":1}\n\n"
    ": keep-alive comment\n\n"
    "event: error\r\ndata: {\"error\":{\"message\":\"x\"}}\r\n\r\n"
    "data: line one\ndata: line two\n\n"
    "data:nospace\n\n"
    "id: 7\nretry: 100\n\n"
    "data: [DONE]\n\n";

void ExpectBodyEvents(const std::vector<SseEvent>& ev) {
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_EQ(ev[0].data, "{\"a\":1}");
  EXPECT_EQ(ev[0].event, "");
  EXPECT_FALSE(ev[0].done);
  EXPECT_EQ(ev[1].event, "error");
  EXPECT_EQ(ev[1].data, "{\"error\":{\"message\":\"x\"}}");
  EXPECT_EQ(ev[2].data, "line one\nline two");  // multi-line data
  EXPECT_EQ(ev[3].data, "nospace");
  EXPECT_EQ(ev[4].data, "[DONE]");
  EXPECT_TRUE(ev[4].done);
}

TEST(SseParserTest, WholeBody) { ExpectBodyEvents(FeedInPieces(kBody, {})); }

TEST(SseParserTest, EverySplitPointGivesTheSameEvents) {
  const std::string body = kBody;
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    SCOPED_TRACE(cut);
    ExpectBodyEvents(FeedInPieces(body, {cut}));
  }
}

TEST(SseParserTest, ByteByByte) {
  const std::string body = kBody;
  std::vector<size_t> cuts;
  for (size_t i = 1; i < body.size(); ++i) cuts.push_back(i);
  ExpectBodyEvents(FeedInPieces(body, cuts));
}

TEST(SseParserTest, CrLfSplitAcrossReads) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: x\r", &out);
  p.Feed("\n\r", &out);
  EXPECT_EQ(out.size(), 1u);  // "\r\n\r" already ends the event
  p.Feed("\n", &out);          // the '\n' of the final "\r\n" is eaten
  p.Feed("data: y\n\n", &out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].data, "x");
  EXPECT_EQ(out[1].data, "y");
}

TEST(SseParserTest, MissingFinalBlankLineDeliveredAtFinish) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("data: [DONE]", &out);
  EXPECT_TRUE(out.empty());
  p.Finish(&out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].done);
}

TEST(SseParserTest, EmptyDataIsAnEventButBlankLinesAreNot) {
  SseParser p;
  std::vector<SseEvent> out;
  p.Feed("\n\n\ndata:\n\n", &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data, "");
}

}  // namespace
}  // namespace weft::loadgen
