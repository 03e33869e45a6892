#include "server/openai_response.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace weft::server {
namespace {

using json = nlohmann::json;

ResponseMeta Meta(bool chat) {
  return ResponseMeta{.id = std::string(chat ? "chatcmpl-1" : "cmpl-1"),
                      .chat = chat,
                      .created = 123,
                      .model = std::string("m"),
                      .system_fingerprint = std::string()};
}

PositionLogprobs Lp(const std::string& text, float lp) {
  PositionLogprobs p;
  p.chosen = {7, text, lp};
  p.top = {{7, text, lp}, {8, "z", lp - 1}};
  return p;
}

TEST(OpenAiResponseTest, CompletionShape) {
  ChoiceResult c;
  c.text = "echo ab";
  c.logprob_text_start = 5;
  c.logprobs = {Lp("a", -0.1f), Lp("b", -0.2f)};
  c.finish = FinishReason::kLength;
  Usage u{3, 2, 1, {}};
  json j = json::parse(CompletionResponseJson(Meta(false), {c}, true, u));
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["created"], 123);
  EXPECT_EQ(j["model"], "m");
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["text"], "echo ab");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"a", "b"}));
  EXPECT_FLOAT_EQ(lp["token_logprobs"][1].get<float>(), -0.2f);
  EXPECT_EQ(lp["text_offset"], json({5, 6}));
  EXPECT_TRUE(lp["top_logprobs"][0].contains("z"));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 2);
  EXPECT_EQ(j["usage"]["total_tokens"], 5);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 1);
  // Without logprobs: null.
  json k = json::parse(CompletionResponseJson(Meta(false), {c}, false, u));
  EXPECT_TRUE(k["choices"][0]["logprobs"].is_null());
}

TEST(OpenAiResponseTest, TextOffsetsCountCharactersAndTopHoldsTheSample) {
  ChoiceResult c;
  c.text = "Caf\xc3\xa9 \xc3\xa9" "b";
  c.logprob_text_start = 5;
  PositionLogprobs e = Lp("\xc3\xa9", -0.9f);
  e.top = {{8, "z", -0.5f}};  // the sample (forced, say) is not in the top
  c.logprobs = {e, Lp("b", -0.2f)};
  json j = json::parse(CompletionResponseJson(Meta(false), {c}, true, {}));
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["text_offset"], json({5, 6}));  // characters, not bytes
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_FLOAT_EQ(lp["top_logprobs"][0]["\xc3\xa9"].get<float>(), -0.9f);
}

TEST(OpenAiResponseTest, EchoedPromptLogprobsStartWithANull) {
  ChoiceResult c;
  c.text = "ab c";
  PositionLogprobs first = Lp("ab", 0.0f);
  first.has_logprob = false;  // the prompt's first token has no context
  c.logprobs = {first, Lp(" c", -1.5f)};
  json j = json::parse(CompletionResponseJson(Meta(false), {c}, true, {}));
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"ab", " c"}));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_FLOAT_EQ(lp["token_logprobs"][1].get<float>(), -1.5f);
  EXPECT_EQ(lp["text_offset"], json({0, 2}));
}

TEST(OpenAiResponseTest, ChatShape) {
  ChoiceResult c;
  c.text = "hi";
  c.logprobs = {Lp("h", -0.5f)};
  c.finish = FinishReason::kStop;
  json j = json::parse(ChatResponseJson(Meta(true), {c, c}, true, Usage{}));
  EXPECT_EQ(j["object"], "chat.completion");
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(j["choices"][0]["message"]["content"], "hi");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  const json& e = j["choices"][0]["logprobs"]["content"][0];
  EXPECT_EQ(e["token"], "h");
  EXPECT_EQ(e["bytes"], json({104}));
  EXPECT_EQ(e["top_logprobs"].size(), 2u);
  EXPECT_EQ(e["top_logprobs"][1]["token"], "z");
}

TEST(OpenAiResponseTest, Chunks) {
  ChunkPiece p;
  p.index = 2;
  p.role = true;
  p.usage_null = true;
  json a = json::parse(ChunkJson(Meta(true), p));
  EXPECT_EQ(a["object"], "chat.completion.chunk");
  EXPECT_EQ(a["choices"][0]["index"], 2);
  EXPECT_EQ(a["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(a["choices"][0]["delta"]["content"], "");
  EXPECT_TRUE(a["choices"][0]["finish_reason"].is_null());
  EXPECT_TRUE(a.contains("usage") && a["usage"].is_null());
  ChunkPiece f;
  f.finish = FinishReason::kStop;
  json b = json::parse(ChunkJson(Meta(true), f));
  EXPECT_TRUE(b["choices"][0]["delta"].empty());
  EXPECT_EQ(b["choices"][0]["finish_reason"], "stop");
  EXPECT_FALSE(b.contains("usage"));
  ChunkPiece t;
  t.text = "x";
  json c = json::parse(ChunkJson(Meta(false), t));
  EXPECT_EQ(c["object"], "text_completion");
  EXPECT_EQ(c["choices"][0]["text"], "x");
  json u = json::parse(UsageChunkJson(Meta(true), Usage{1, 2, 0, {}}));
  EXPECT_TRUE(u["choices"].empty());
  EXPECT_EQ(u["usage"]["total_tokens"], 3);
  EXPECT_EQ(SseData("{}"), "data: {}\n\n");
}

TEST(OpenAiResponseTest, InvalidUtf8IsReplacedNotThrown) {
  ChoiceResult c;
  c.text = std::string("a\xff\xfe", 3);
  c.logprobs = {Lp(std::string("\xe4\xbd", 2), -1)};  // half a character
  std::string s = ChatResponseJson(Meta(true), {c}, true, Usage{});
  json j = json::parse(s);
  EXPECT_EQ(j["choices"][0]["logprobs"]["content"][0]["bytes"],
            json({0xe4, 0xbd}));
}

TEST(OpenAiResponseTest, ErrorJson) {
  ApiError e = BadRequest("bad temperature", "temperature");
  json j = json::parse(e.ToJson());
  EXPECT_EQ(j["error"]["message"], "bad temperature");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_EQ(j["error"]["param"], "temperature");
  EXPECT_TRUE(j["error"]["code"].is_null());
  EXPECT_EQ(FromStatus(ResourceExhaustedError("x")).http_status, 429);
  EXPECT_EQ(FromStatus(UnavailableError("x")).http_status, 503);
  EXPECT_EQ(FromStatus(InvalidArgumentError("x")).http_status, 400);
  EXPECT_EQ(FromStatus(InternalError("x")).http_status, 500);
}

}  // namespace
}  // namespace weft::server
