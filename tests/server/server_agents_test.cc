// /v1/messages, /v1/messages/count_tokens and /v1/responses through the
// HTTP layer (FakeBackend): bodies, named SSE events, stop reasons, tool
// calls, error shapes, x-api-key, timeouts and client disconnects.
#include <string>

#include "tests/server/server_fixture.h"

namespace weft::server::testing {
namespace {

constexpr char kUser[] = R"("messages": [{"role": "user", "content": "hi"}])";

// An SSE body's (event name, data) pairs.
std::vector<std::pair<std::string, json>> Named(const ClientResponse& r) {
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
  std::vector<std::pair<std::string, json>> out;
  size_t pos = 0;
  while (pos < r.body.size()) {
    const size_t end = r.body.find("\n\n", pos);
    if (end == std::string::npos) break;
    const std::string ev = r.body.substr(pos, end - pos);
    const size_t nl = ev.find('\n');
    EXPECT_EQ(ev.rfind("event: ", 0), 0u) << ev;
    json data = json::parse(ev.substr(nl + 7), nullptr, false);
    EXPECT_FALSE(data.is_discarded()) << ev;
    EXPECT_EQ(data["type"], ev.substr(7, nl - 7));
    out.push_back({ev.substr(7, nl - 7), data});
    pos = end + 2;
  }
  return out;
}

TEST_F(ServerTest, MessagesTextStopSequenceAndMaxTokens) {
  ClientResponse r =
      Post("/v1/messages", std::string(R"({"max_tokens": 6, )") + kUser + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["type"], "message");
  EXPECT_EQ(j["role"], "assistant");
  EXPECT_EQ(j["content"][0]["type"], "text");
  EXPECT_EQ(j["stop_reason"], "max_tokens");
  EXPECT_TRUE(j["stop_sequence"].is_null());
  EXPECT_EQ(j["usage"]["output_tokens"], 6);
  EXPECT_GT(j["usage"]["input_tokens"].get<int>(), 0);
  // A stop sequence from inside the output (the fake's text is the same
  // for every request): cut there, and named.
  const std::string stop =
      j["content"][0]["text"].get<std::string>().substr(4, 3);
  r = Post("/v1/messages", R"({"max_tokens": 6, "stop_sequences": [")" + stop +
                               R"("], )" + kUser + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  j = json::parse(r.body);
  EXPECT_EQ(j["stop_reason"], "stop_sequence");
  EXPECT_EQ(j["stop_sequence"], stop);
  EXPECT_EQ(j["content"][0]["text"].get<std::string>().find(stop),
            std::string::npos);
}

TEST_F(ServerTest, MessagesStreamsNamedEvents) {
  auto ev = Named(
      Post("/v1/messages",
           std::string(R"({"max_tokens": 4, "stream": true, )") + kUser + "}"));
  ASSERT_GE(ev.size(), 7u);
  EXPECT_EQ(ev[0].first, "message_start");
  EXPECT_EQ(ev[1].first, "ping");
  EXPECT_EQ(ev[2].first, "content_block_start");
  std::string text;
  for (const auto& [name, d] : ev) {
    if (name == "content_block_delta")
      text += d["delta"]["text"].get<std::string>();
  }
  EXPECT_FALSE(text.empty());
  EXPECT_EQ(ev[ev.size() - 3].first, "content_block_stop");
  EXPECT_EQ(ev[ev.size() - 2].first, "message_delta");
  EXPECT_EQ(ev[ev.size() - 2].second["delta"]["stop_reason"], "max_tokens");
  EXPECT_EQ(ev[ev.size() - 2].second["usage"]["output_tokens"], 4);
  EXPECT_EQ(ev.back().first, "message_stop");
}

TEST_F(ServerTest, MessagesErrorsInAnthropicShapeAndCountTokens) {
  ClientResponse r = Post("/v1/messages", std::string("{") + kUser + "}");
  EXPECT_EQ(r.status, 400);
  json j = json::parse(r.body);
  EXPECT_EQ(j["type"], "error");
  EXPECT_EQ(j["error"]["type"], "invalid_request_error");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("max_tokens"),
            std::string::npos);
  r = Post("/v1/messages/count_tokens", std::string("{") + kUser + "}");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_GT(json::parse(r.body)["input_tokens"].get<int>(), 0);
  // Responses errors stay in OpenAI's shape.
  ExpectError(Post("/v1/responses", R"({"input": "hi", "store": true})"), 400,
              "store");
}

TEST_F(ServerTest, MessagesAcceptXApiKey) {
  ServerConfig c;
  c.api_key = "sekret";
  server_.reset();
  StartServer(c);
  const std::string body = std::string(R"({"max_tokens": 2, )") + kUser + "}";
  ClientResponse r = Post("/v1/messages", body);
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(Post("/v1/messages", body, {{"x-api-key", "wrong"}}).status, 401);
  EXPECT_EQ(Post("/v1/messages", body, {{"x-api-key", "sekret"}}).status, 200);
  EXPECT_EQ(
      Post("/v1/messages", body, {{"Authorization", "Bearer sekret"}}).status,
      200);
}

TEST_F(ServerTest, MessagesTimeoutIsTimeoutError) {
  ServerConfig c;
  c.max_request_seconds = 0.2;
  FakeBackendOptions o;
  o.token_delay_ms = 20;
  server_.reset();
  StartServer(c, o);
  ClientResponse r = Post("/v1/messages",
                          std::string(R"({"max_tokens": 200, )") + kUser + "}");
  EXPECT_EQ(r.status, 504);
  EXPECT_EQ(json::parse(r.body)["error"]["type"], "timeout_error");
  auto ev = Named(Post(
      "/v1/messages",
      std::string(R"({"max_tokens": 200, "stream": true, )") + kUser + "}"));
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().first, "error");
  EXPECT_EQ(ev.back().second["error"]["type"], "timeout_error");
  ev = Named(
      Post("/v1/responses",
           R"({"input": "hi", "max_output_tokens": 200, "stream": true})"));
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev.back().first, "response.failed");
}

TEST_F(ServerTest, AgentRoutesDisconnectAborts) {
  backend_->set_token_delay_ms(10);
  const std::pair<const char*, std::string> calls[] = {
      {"/v1/messages",
       std::string(R"({"max_tokens": 200, "stream": true, )") + kUser + "}"},
      {"/v1/responses", R"({"input": "hi", "max_output_tokens": 200})"}};
  size_t aborted = 0;
  for (const auto& [path, body] : calls) {
    {
      HttpConnection c(port_);
      ASSERT_TRUE(c.Send("POST", path, body));
      ASSERT_TRUE(backend_->WaitFor(
          [](const BackendStats& s) { return s.num_running == 1; }));
    }  // closes the socket
    ++aborted;
    ASSERT_TRUE(backend_->WaitFor([&](const BackendStats& s) {
      return backend_->aborted_ids().size() == aborted && s.num_running == 0;
    }));
  }
  EXPECT_EQ(backend_->aborted_ids()[0].rfind("msg-", 0), 0u);
  EXPECT_EQ(backend_->aborted_ids()[1].rfind("resp-", 0), 0u);
}

TEST_F(ServerTest, ResponsesTextAndStream) {
  ClientResponse r =
      Post("/v1/responses", R"({"input": "hi", "max_output_tokens": 3})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "response");
  EXPECT_EQ(j["status"], "incomplete");
  EXPECT_EQ(j["output"][0]["type"], "message");
  EXPECT_EQ(j["usage"]["output_tokens"], 3);
  const std::string text = j["output"][0]["content"][0]["text"];
  auto ev =
      Named(Post("/v1/responses",
                 R"({"input": "hi", "max_output_tokens": 3, "stream": true})"));
  ASSERT_GE(ev.size(), 8u);
  EXPECT_EQ(ev[0].first, "response.created");
  std::string streamed;
  for (const auto& [name, d] : ev) {
    if (name == "response.output_text.delta")
      streamed += d["delta"].get<std::string>();
  }
  EXPECT_EQ(streamed, text);
  EXPECT_EQ(ev.back().first, "response.incomplete");
  EXPECT_EQ(ev.back().second["response"]["output"][0]["content"][0]["text"],
            text);
}

}  // namespace
}  // namespace weft::server::testing
