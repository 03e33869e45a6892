// The Anthropic Messages and OpenAI Responses translations (request ->
// chat completions body) and output writers (chat output -> their bodies
// and SSE events), without a server.
#include "server/agent_apis.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/openai_request.h"

namespace weft::server {
namespace {

using json = nlohmann::json;

ResponseMeta Meta(const std::string& id) {
  ResponseMeta m;
  m.id = id;
  m.chat = true;
  m.created = 1;
  m.model = "m";
  return m;
}

ParsedToolCall Call(const std::string& id, const std::string& name,
                    const std::string& args) {
  ParsedToolCall c;
  c.id = id;
  c.name = name;
  c.arguments = args;
  return c;
}

Usage Tokens(int32_t prompt, int32_t completion) {
  Usage u;
  u.prompt_tokens = prompt;
  u.completion_tokens = completion;
  return u;
}

json Chat(const ApiResult<TranslatedRequest>& t) {
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return t.ok() ? json::parse(t.value().chat_json) : json();
}

// The named events of an SSE text, as (name, data).
std::vector<std::pair<std::string, json>> Events(const std::string& sse) {
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < sse.size()) {
    size_t end = sse.find("\n\n", pos);
    EXPECT_NE(end, std::string::npos);
    std::string ev = sse.substr(pos, end - pos);
    size_t nl = ev.find('\n');
    EXPECT_EQ(ev.substr(0, 7), "event: ");
    EXPECT_EQ(ev.substr(nl + 1, 6), "data: ");
    out.push_back({ev.substr(7, nl - 7), json::parse(ev.substr(nl + 7))});
    pos = end + 2;
  }
  return out;
}

TEST(AnthropicRequestTest, TranslatesMessagesToolsAndSampling) {
  const json chat = Chat(TranslateAnthropicRequest(R"({
    "model": "m", "max_tokens": 20, "system": [{"type": "text", "text": "Be brief."}],
    "stop_sequences": ["END"], "temperature": 0.5, "top_k": 3, "stream": true,
    "tools": [{"name": "get_weather", "description": "d",
               "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": true},
    "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [{"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
        "content": [{"type": "text", "text": "sunny"}]}, {"type": "text", "text": "Thanks"}]}]})",
                                                   false));
  EXPECT_EQ(chat["max_tokens"], 20);
  EXPECT_EQ(chat["stop"], json::array({"END"}));
  EXPECT_EQ(chat["top_k"], 3);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["parallel_tool_calls"], false);
  EXPECT_EQ(chat["tool_choice"]["function"]["name"], "get_weather");
  EXPECT_EQ(chat["tools"][0]["function"]["parameters"]["type"], "object");
  const json& m = chat["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], json({{"role", "system"}, {"content", "Be brief."}}));
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"],
            R"({"city":"Paris"})");
  EXPECT_EQ(m[3], json({{"role", "tool"},
                        {"tool_call_id", "toolu_1"},
                        {"content", "sunny"}}));
  EXPECT_EQ(m[4], json({{"role", "user"}, {"content", "Thanks"}}));
  // The result parses as a chat request.
  EXPECT_TRUE(ParseChatRequest(json(chat).dump(), ParseLimits{}).ok());
}

TEST(AnthropicRequestTest, RefusesWhatItCannotServe) {
  const char* bad[] = {
      R"({"messages": [{"role": "user", "content": "hi"}]})",  // no max_tokens
      R"({"max_tokens": 5, "messages": [{"role": "user", "content": "hi"},
          {"role": "assistant", "content": "The answer is"}]})",  // prefill
      R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image",
          "source": {}}]}]})",
      R"({"max_tokens": 5, "tools": [{"type": "web_search_20250305", "name": "w"}],
          "messages": [{"role": "user", "content": "hi"}]})",
      R"({"max_tokens": 5, "tool_choice": {"type": "sometimes"},
          "messages": [{"role": "user", "content": "hi"}]})"};
  for (const char* b : bad) {
    ApiResult<TranslatedRequest> t = TranslateAnthropicRequest(b, false);
    ASSERT_FALSE(t.ok()) << b;
    EXPECT_EQ(t.error().http_status, 400);
  }
  // count_tokens needs no max_tokens.
  EXPECT_TRUE(TranslateAnthropicRequest(bad[0], true).ok());
}

TEST(AnthropicFormatTest, StreamEventsAndStopReasons) {
  std::unique_ptr<ApiFormat> f = MakeAnthropicFormat({"END"});
  const ResponseMeta meta = Meta("msg-1");
  std::string sse = f->StreamStart(meta, 7);
  ChunkPiece text;
  text.text = "Hi";
  sse += f->StreamPiece(text);
  ChunkPiece start;
  start.tool_call = Call("call_1", "get_weather", "");
  start.tool_call_start = true;
  sse += f->StreamPiece(start);
  ChunkPiece args;
  args.tool_call = Call("", "", R"({"city":)");
  sse += f->StreamPiece(args);
  ChunkPiece fin;
  fin.finish = FinishReason::kStop;
  fin.tool_calls_finish = true;
  sse += f->StreamPiece(fin);
  sse += f->StreamEnd(Tokens(7, 3));
  std::vector<std::string> names;
  for (const auto& [name, data] : Events(sse)) {
    EXPECT_EQ(data["type"], name);
    names.push_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "message_start", "ping", "content_block_start",
                       "content_block_delta", "content_block_stop",
                       "content_block_start", "content_block_delta",
                       "content_block_stop", "message_delta", "message_stop"}));
  const auto ev = Events(sse);
  EXPECT_EQ(ev[0].second["message"]["usage"]["input_tokens"], 7);
  EXPECT_EQ(ev[5].second["index"], 1);
  EXPECT_EQ(ev[5].second["content_block"]["type"], "tool_use");
  EXPECT_EQ(ev[6].second["delta"]["partial_json"], R"({"city":)");
  EXPECT_EQ(ev[8].second["delta"]["stop_reason"], "tool_use");
  EXPECT_EQ(ev[8].second["usage"]["output_tokens"], 3);

  // Non-streamed: a client stop string reads stop_sequence; the template's
  // own end-of-turn string reads end_turn; length reads max_tokens.
  ChoiceResult c;
  c.text = "abc";
  c.finish = FinishReason::kStop;
  c.stop_string = "END";
  json body =
      json::parse(MakeAnthropicFormat({"END"})->Body(meta, c, Usage{}).value());
  EXPECT_EQ(body["stop_reason"], "stop_sequence");
  EXPECT_EQ(body["stop_sequence"], "END");
  EXPECT_EQ(body["content"][0], json({{"type", "text"}, {"text", "abc"}}));
  c.stop_string = "<|im_end|>";
  body =
      json::parse(MakeAnthropicFormat({"END"})->Body(meta, c, Usage{}).value());
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  c.finish = FinishReason::kLength;
  body = json::parse(MakeAnthropicFormat({})->Body(meta, c, Usage{}).value());
  EXPECT_EQ(body["stop_reason"], "max_tokens");
  c.finish = FinishReason::kAbort;
  ApiResult<std::string> aborted =
      MakeAnthropicFormat({})->Body(meta, c, Usage{});
  ASSERT_FALSE(aborted.ok());
  EXPECT_EQ(json::parse(aborted.error().ToAnthropicJson())["error"]["type"],
            "timeout_error");
}

TEST(ResponsesRequestTest, TranslatesItemsAndRefusesState) {
  const json chat = Chat(TranslateResponsesRequest(R"({
    "model": "m", "instructions": "Be brief.", "max_output_tokens": 30, "store": false,
    "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "f"},
    "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": "object"}}},
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
              {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
              {"type": "function_call_output", "call_id": "c1", "output": "42"}]})"));
  EXPECT_EQ(chat["max_tokens"], 30);
  EXPECT_EQ(chat["tool_choice"]["function"]["name"], "f");
  EXPECT_EQ(chat["response_format"]["json_schema"]["schema"]["type"], "object");
  const json& m = chat["messages"];
  ASSERT_EQ(m.size(), 4u);
  EXPECT_EQ(m[0]["role"], "system");
  EXPECT_EQ(m[1]["content"], "Hi");
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "c1");
  EXPECT_EQ(
      m[3],
      json({{"role", "tool"}, {"tool_call_id", "c1"}, {"content", "42"}}));
  // The result parses as a chat request (one constraint at a time: the
  // forced call's or the schema's).
  json one = chat;
  one.erase("response_format");
  ApiResult<OpenAiRequest> parsed = ParseChatRequest(one.dump(), ParseLimits{});
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  for (
      const char* b :
      {R"({"input": "hi", "store": true})",
       R"({"input": "hi", "previous_response_id": "resp_1"})",
       R"({"input": "hi", "tools": [{"type": "web_search"}]})",
       R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})"}) {
    ApiResult<TranslatedRequest> t = TranslateResponsesRequest(b);
    ASSERT_FALSE(t.ok()) << b;
    EXPECT_EQ(t.error().http_status, 400);
  }
}

TEST(ResponsesFormatTest, StreamEventsAndBody) {
  std::unique_ptr<ApiFormat> f = MakeResponsesFormat();
  const ResponseMeta meta = Meta("resp-1");
  std::string sse = f->StreamStart(meta, 5);
  ChunkPiece text;
  text.text = "Hi";
  sse += f->StreamPiece(text);
  ChunkPiece start;
  start.tool_call = Call("call_1", "f", "");
  start.tool_call_start = true;
  sse += f->StreamPiece(start);
  ChunkPiece args;
  args.tool_call = Call("", "", "{}");
  sse += f->StreamPiece(args);
  ChunkPiece fin;
  fin.finish = FinishReason::kStop;
  sse += f->StreamPiece(fin);
  sse += f->StreamEnd(Tokens(5, 2));
  std::vector<std::string> names;
  int64_t seq = 0;
  for (const auto& [name, data] : Events(sse)) {
    EXPECT_EQ(data["type"], name);
    EXPECT_EQ(data["sequence_number"], seq++);
    names.push_back(name);
  }
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "response.created", "response.in_progress",
                "response.output_item.added", "response.content_part.added",
                "response.output_text.delta", "response.output_text.done",
                "response.content_part.done", "response.output_item.done",
                "response.output_item.added",
                "response.function_call_arguments.delta",
                "response.function_call_arguments.done",
                "response.output_item.done", "response.completed"}));
  const json done = Events(sse).back().second["response"];
  EXPECT_EQ(done["status"], "completed");
  ASSERT_EQ(done["output"].size(), 2u);
  EXPECT_EQ(done["output"][0]["content"][0]["text"], "Hi");
  EXPECT_EQ(done["output"][1]["call_id"], "call_1");
  EXPECT_EQ(done["output"][1]["arguments"], "{}");
  EXPECT_EQ(done["usage"]["total_tokens"], 7);

  ChoiceResult c;
  c.text = "abc";
  c.finish = FinishReason::kLength;
  json body =
      json::parse(MakeResponsesFormat()->Body(meta, c, Usage{}).value());
  EXPECT_EQ(body["object"], "response");
  EXPECT_EQ(body["status"], "incomplete");
  EXPECT_EQ(body["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(body["output"][0]["content"][0]["text"], "abc");
}

}  // namespace
}  // namespace weft::server
