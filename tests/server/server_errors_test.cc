// Error paths over HTTP: status codes and error body shapes, auth, limits,
// backpressure, readiness, failures mid-stream, disconnects and drain.
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include "tests/server/server_fixture.h"

namespace weft::server::testing {
namespace {

TEST_F(ServerTest, NotFoundAndMethodNotAllowed) {
  ExpectError(Get("/v2/nothing"), 404);
  ClientResponse r = Get("/v1/completions");
  ExpectError(r, 405);
  EXPECT_EQ(r.headers["allow"], "POST");
  ExpectError(Post("/metrics", "{}"), 405);
}

TEST_F(ServerTest, MalformedJsonAndFields) {
  ExpectError(Post("/v1/completions", "{not json"), 400);
  ExpectError(Post("/v1/completions", R"({"prompt": "p", "n": "two"})"), 400,
              "n");
  ExpectError(Post("/v1/chat/completions", R"({"messages": 1})"), 400,
              "messages");
  ExpectError(Post("/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": "x"}],
                       "temperature": 9})"),
              400, "temperature");
  ExpectError(Post("/tokenize", "[]"), 400);
  ExpectError(Post("/detokenize", R"({"tokens": [1, 99999]})"), 400, "tokens");
}

TEST_F(ServerTest, ContextLimits) {
  std::string longp(300, 'x');  // context is 256
  ExpectError(Post("/v1/completions", R"({"prompt": ")" + longp + R"("})"),
              400, "prompt");
  ExpectError(Post("/v1/completions",
                   R"({"prompt": "abc", "max_tokens": 253})"),
              400, "max_tokens");
  EXPECT_EQ(Post("/v1/completions", R"({"prompt": "abc", "max_tokens": 252})")
                .status,
            200);
  ExpectError(Post("/v1/chat/completions",
                   R"({"messages": [{"role": "user", "content": ")" + longp +
                       R"("}]})"),
              400, "messages");
}

TEST_F(ServerTest, TemplateErrorIs400WithItsMessage) {
  ClientResponse r = Post("/v1/chat/completions",
                          R"({"messages": [{"role": "user",
                              "content": "{{raise}}"}]})");
  ExpectError(r, 400, "messages");
  EXPECT_NE(r.body.find("Conversation roles must alternate"), std::string::npos);
}

TEST_F(ServerTest, ApiKey) {
  ServerConfig c;
  c.api_key = "sekret";
  server_.reset();
  StartServer(c);
  const std::string body = R"({"prompt": "a", "max_tokens": 1})";
  ClientResponse none = Post("/v1/completions", body);
  ExpectError(none, 401);
  EXPECT_EQ(json::parse(none.body)["error"]["type"], "authentication_error");
  ExpectError(Post("/v1/completions", body,
                   {{"Authorization", "Bearer sekreT"}}),
              401);
  ExpectError(Post("/v1/completions", body,
                   {{"Authorization", "Bearer sekret2"}}),
              401);
  ExpectError(Post("/v1/completions", body, {{"Authorization", "sekret"}}),
              401);
  ExpectError(Get("/v1/models"), 401);
  EXPECT_EQ(Post("/v1/completions", body, {{"Authorization", "Bearer sekret"}})
                .status,
            200);
  // The scheme is case-insensitive (RFC 9110 11.1), the key is not.
  EXPECT_EQ(Post("/v1/completions", body, {{"Authorization", "bearer sekret"}})
                .status,
            200);
  EXPECT_EQ(Get("/health").status, 200);
  EXPECT_EQ(Get("/metrics").status, 200);
}

TEST_F(ServerTest, ModelById) {
  ClientResponse ok = Get("/v1/models/fake-model");
  ASSERT_EQ(ok.status, 200) << ok.body;
  json m = json::parse(ok.body);
  EXPECT_EQ(m["id"], "fake-model");
  EXPECT_EQ(m["object"], "model");
  ClientResponse other = Get("/v1/models/gpt-4");
  ExpectError(other, 404, "model");
  EXPECT_EQ(json::parse(other.body)["error"]["code"], "model_not_found");
  ClientResponse post = Post("/v1/models/fake-model", "{}");
  ExpectError(post, 405);
  EXPECT_EQ(post.headers["allow"], "GET");
}

TEST_F(ServerTest, CorsForBrowsers) {
  ServerConfig c;
  c.api_key = "sekret";  // preflights carry no credentials
  server_.reset();
  StartServer(c);
  const std::map<std::string, std::string> page = {
      {"Origin", "http://page.example"},
      {"Access-Control-Request-Method", "POST"},
      {"Access-Control-Request-Headers", "authorization, content-type"}};
  ClientResponse pre = Fetch(port_, "OPTIONS", "/v1/chat/completions", "", page);
  EXPECT_EQ(pre.status, 204);
  EXPECT_EQ(pre.headers.count("content-length"), 0u);  // RFC 9110 8.6
  EXPECT_EQ(pre.headers["access-control-allow-origin"], "*");
  EXPECT_NE(pre.headers["access-control-allow-methods"].find("POST"),
            std::string::npos);
  EXPECT_EQ(pre.headers["access-control-allow-headers"],
            "authorization, content-type");
  ClientResponse r = Post("/v1/completions", R"({"prompt": "a", "max_tokens": 1})",
                          {{"Origin", "http://page.example"},
                           {"Authorization", "Bearer sekret"}});
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["access-control-allow-origin"], "*");
  EXPECT_EQ(Get("/health").headers.count("access-control-allow-origin"), 0u);
  // Turned off: no preflight route, no header.
  c.cors_origin = "";
  server_.reset();
  StartServer(c);
  EXPECT_EQ(Fetch(port_, "OPTIONS", "/v1/models", "", page).status, 405);
  EXPECT_EQ(Fetch(port_, "GET", "/health", "", page)
                .headers.count("access-control-allow-origin"),
            0u);
}

TEST_F(ServerTest, StreamToAnHttp10ClientEndsWithTheConnection) {
  // HTTP/1.0 has no chunked coding: the stream is the raw body, then close.
  HttpConnection conn(port_);
  const std::string body = R"({"prompt": "x", "max_tokens": 3, "stream": true})";
  ASSERT_TRUE(conn.SendRaw("POST /v1/completions HTTP/1.0\r\n"
                           "Content-Type: application/json\r\n"
                           "Content-Length: " + std::to_string(body.size()) +
                           "\r\n\r\n" + body));
  ClientResponse r = conn.Read();
  ASSERT_EQ(r.status, 200);
  EXPECT_FALSE(r.chunked);
  EXPECT_TRUE(r.headers["transfer-encoding"].empty());
  EXPECT_EQ(r.headers["connection"], "close");
  std::vector<std::string> events = SseEvents(r.body);
  ASSERT_GE(events.size(), 2u) << r.body;
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(r.body.find("\r\n"), std::string::npos) << "chunk framing";
}

TEST_F(ServerTest, BodyAndHeaderLimits) {
  ServerConfig c;
  c.max_body_bytes = 1024;
  c.max_header_bytes = 2048;
  server_.reset();
  StartServer(c);
  std::string big = R"({"prompt": ")" + std::string(2000, 'a') + R"("})";
  ClientResponse r = Post("/v1/completions", big);
  ExpectError(r, 413);
  EXPECT_EQ(r.headers["connection"], "close");
  // Chunked upload over the limit.
  HttpConnection conn(port_);
  std::string chunk(1500, 'b');
  ASSERT_TRUE(conn.SendRaw(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      StrHex(chunk.size()) + "\r\n" + chunk + "\r\n0\r\n\r\n"));
  ExpectError(conn.Read(), 413);
  // Headers over the limit.
  ClientResponse h = Fetch(port_, "GET", "/health", "",
                           {{"X-Big", std::string(4000, 'h')}});
  EXPECT_EQ(h.status, 431);
  // Not HTTP at all.
  HttpConnection junk(port_);
  ASSERT_TRUE(junk.SendRaw("HELLO THERE\r\n\r\n"));
  ExpectError(junk.Read(), 400);
  // The HTTP layer's own responses are counted like the handler's.
  const std::string m = Get("/metrics").body;
  EXPECT_NE(m.find("weft_http_responses_total{code=\"413\"} 2\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("weft_http_responses_total{code=\"431\"} 1\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("weft_http_responses_total{code=\"400\"} 1\n"),
            std::string::npos)
      << m;
}

TEST_F(ServerTest, QueueFullIs429WithRetryAfter) {
  backend_->set_reject_submits(true);
  ClientResponse r = Post("/v1/completions", R"({"prompt": "a"})");
  ExpectError(r, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
  backend_->set_reject_submits(false);

  // Server-side queue check: one running, one waiting, the third is refused.
  ServerConfig c;
  c.max_queue = 1;
  FakeBackendOptions o;
  o.max_running = 1;
  o.token_delay_ms = 20;
  server_.reset();
  StartServer(c, o);
  HttpConnection a(port_), b(port_);
  const std::string body = R"({"prompt": "a", "max_tokens": 30})";
  ASSERT_TRUE(a.Send("POST", "/v1/completions", body));
  ASSERT_TRUE(backend_->WaitFor(
      [](const BackendStats& s) { return s.num_running == 1; }));
  ASSERT_TRUE(b.Send("POST", "/v1/completions", body));
  ASSERT_TRUE(backend_->WaitFor(
      [](const BackendStats& s) { return s.num_waiting == 1; }));
  ClientResponse third = Post("/v1/completions", body);
  ExpectError(third, 429);
  EXPECT_EQ(third.headers["retry-after"], "1");
  backend_->set_token_delay_ms(0);
  EXPECT_EQ(a.Read().status, 200);
  EXPECT_EQ(b.Read().status, 200);
}

TEST_F(ServerTest, LoadingIs503) {
  backend_->set_readiness(Readiness::kLoading);
  ClientResponse r = Post("/v1/completions", R"({"prompt": "a"})");
  ExpectError(r, 503);
  EXPECT_EQ(r.headers["retry-after"], "1");
  EXPECT_EQ(Get("/health/ready").status, 503);
  EXPECT_EQ(Get("/health").status, 503);
  EXPECT_EQ(Get("/health/live").status, 200);
  backend_->set_readiness(Readiness::kReady);
  EXPECT_EQ(Get("/health/ready").status, 200);
}

TEST_F(ServerTest, FailureMidStreamSendsErrorEventThenDone) {
  backend_->set_fail_after(2);
  ClientResponse r = Post("/v1/chat/completions", R"({
      "messages": [{"role": "user", "content": "x"}], "stream": true,
      "max_tokens": 10})");
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> events = SseEvents(r.body);
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.back(), "[DONE]");
  json err = json::parse(events[events.size() - 2]);
  ASSERT_TRUE(err.contains("error")) << events[events.size() - 2];
  EXPECT_EQ(err["error"]["message"], "injected failure");
  // Non-streamed: an error response.
  ExpectError(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 5})"),
              500);
}

TEST_F(ServerTest, DisconnectWhileStreamingAborts) {
  backend_->set_token_delay_ms(10);
  {
    HttpConnection c(port_);
    ASSERT_TRUE(c.Send("POST", "/v1/completions",
                       R"({"prompt": "a", "max_tokens": 200, "stream": true})"));
    std::string got = c.ReadSome(200);  // some chunks arrived
    ASSERT_NE(got.find("data: "), std::string::npos);
  }  // closes the socket
  ASSERT_TRUE(backend_->WaitFor([&](const BackendStats& s) {
    return !backend_->aborted_ids().empty() && s.num_running == 0;
  }));
  EXPECT_EQ(backend_->aborted_ids()[0].rfind("cmpl-", 0), 0u);
  ASSERT_TRUE(backend_->WaitFor([&](const BackendStats&) {
    return server_->in_flight() == 0;
  }));
}

TEST_F(ServerTest, DisconnectWhileWaitingForJsonAborts) {
  backend_->set_token_delay_ms(10);
  {
    HttpConnection c(port_);
    ASSERT_TRUE(c.Send("POST", "/v1/chat/completions",
                       R"({"messages": [{"role": "user", "content": "x"}],
                           "max_tokens": 200})"));
    ASSERT_TRUE(backend_->WaitFor(
        [](const BackendStats& s) { return s.num_running == 1; }));
  }
  ASSERT_TRUE(backend_->WaitFor([&](const BackendStats& s) {
    return !backend_->aborted_ids().empty() && s.num_running == 0;
  }));
  EXPECT_EQ(backend_->aborted_ids()[0].rfind("chatcmpl-", 0), 0u);
  ASSERT_TRUE(backend_->WaitFor([&](const BackendStats&) {
    return server_->in_flight() == 0;
  }));
  ClientResponse m = Get("/metrics");
  EXPECT_NE(m.body.find("vllm:request_success_total{finished_reason=\"abort\","
                        "model_name=\"fake-model\"} 1\n"),
            std::string::npos);
}

TEST_F(ServerTest, DrainFinishesInFlightThenStops) {
  backend_->set_token_delay_ms(20);
  HttpConnection probe(port_), stream(port_);
  ASSERT_TRUE(probe.Send("GET", "/health/ready", ""));
  ASSERT_EQ(probe.Read().status, 200);
  ASSERT_TRUE(stream.Send("POST", "/v1/completions",
                          R"({"prompt": "a", "max_tokens": 15, "stream": true})"));
  ASSERT_TRUE(backend_->WaitFor(
      [](const BackendStats& s) { return s.num_running == 1; }));
  std::thread drain([&] {
    server_->Drain(std::chrono::steady_clock::now() + std::chrono::seconds(30));
  });
  // The open connection now sees not-ready, and new generations get 503.
  // (Polled until a deadline, not a count: with TCP_NODELAY a probe takes
  // well under a millisecond, and 200 of them could all run before the
  // drain thread starts.)
  int ready = 200;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (ready == 200 && std::chrono::steady_clock::now() < give_up) {
    ASSERT_TRUE(probe.Send("GET", "/health/ready", ""));
    ready = probe.Read().status;
  }
  EXPECT_EQ(ready, 503);
  ASSERT_TRUE(probe.Send("POST", "/v1/completions", R"({"prompt": "a"})"));
  EXPECT_EQ(probe.Read().status, 503);
  // The in-flight stream completes normally.
  std::vector<json> chunks = Stream(stream.Read());
  std::string text;
  for (const json& k : chunks) text += k["choices"][0]["text"];
  EXPECT_EQ(text, FakeBackend::ExpectedText(0, 0, 15));
  drain.join();
  EXPECT_EQ(Fetch(port_, "GET", "/health").status, 0);  // not listening
}

TEST_F(ServerTest, DrainDeadlineAbortsTheRest) {
  backend_->set_token_delay_ms(20);
  HttpConnection c(port_);
  ASSERT_TRUE(c.Send("POST", "/v1/completions",
                     R"({"prompt": "a", "max_tokens": 250, "stream": true})"));
  ASSERT_TRUE(backend_->WaitFor(
      [](const BackendStats& s) { return s.num_running == 1; }));
  server_->Drain(std::chrono::steady_clock::now() +
                 std::chrono::milliseconds(100));
  EXPECT_FALSE(backend_->aborted_ids().empty());
  EXPECT_EQ(server_->in_flight(), 0u);
}

TEST_F(ServerTest, TooManyConnectionsIs503) {
  ServerConfig c;
  c.max_connections = 2;
  server_.reset();
  StartServer(c);
  HttpConnection a(port_), b(port_);
  ASSERT_TRUE(a.Send("GET", "/health", ""));
  ASSERT_EQ(a.Read().status, 200);
  ASSERT_TRUE(b.Send("GET", "/health", ""));
  ASSERT_EQ(b.Read().status, 200);
  HttpConnection third(port_);
  ClientResponse r = third.Read();
  ExpectError(r, 503);
  ASSERT_TRUE(b.Send("GET", "/metrics", ""));
  const std::string m = b.Read().body;
  EXPECT_NE(m.find("weft_http_responses_total{code=\"503\"} 1\n"),
            std::string::npos)
      << m;
}

}  // namespace
}  // namespace weft::server::testing

namespace weft::server::testing {
namespace {

TEST_F(ServerTest, HeaderAndIdleTimeoutsCloseTheConnection) {
  ServerConfig c;
  c.header_read_timeout_s = 0.2;
  c.idle_timeout_s = 0.2;
  server_.reset();
  StartServer(c);
  HttpConnection slow(port_);
  ASSERT_TRUE(slow.SendRaw("GET /health HTTP/1.1\r\n"));  // never finishes
  EXPECT_TRUE(slow.WaitClosed());
  HttpConnection idle(port_);
  ASSERT_TRUE(idle.Send("GET", "/health", ""));
  EXPECT_EQ(idle.Read().status, 200);
  EXPECT_TRUE(idle.WaitClosed());  // keep-alive wait runs out
}

// Tokenizing runs off the I/O threads: with as many requests stuck in the
// tokenizer as there are I/O threads, other connections are still served.
TEST_F(ServerTest, SlowTokenizingDoesNotBlockOtherConnections) {
  ServerConfig c;
  c.io_threads = 2;
  c.prepare_threads = 2;
  server_.reset();
  StartServer(c);
  backend_->HoldTokenize(true);
  std::vector<std::thread> slow;
  std::vector<int> status(2, 0);
  for (int i = 0; i < 2; ++i) {
    slow.emplace_back([&, i] {
      status[i] =
          Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 2})")
              .status;
    });
  }
  ASSERT_TRUE(backend_->WaitTokenizeWaiters(2));
  auto health =
      std::async(std::launch::async, [&] { return Get("/health").status; });
  const bool answered =
      health.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  backend_->HoldTokenize(false);  // unblock before any assertion can return
  EXPECT_TRUE(answered) << "an I/O thread was held by the tokenizer";
  EXPECT_EQ(health.get(), 200);
  for (std::thread& t : slow) t.join();
  EXPECT_EQ(status, (std::vector<int>{200, 200}));
}

// Requests being prepared count against max_queue: past it, 429 at once.
TEST_F(ServerTest, PreparingRequestsCountAgainstTheQueueLimit) {
  ServerConfig c;
  c.max_queue = 1;
  server_.reset();
  StartServer(c);
  backend_->HoldTokenize(true);
  int status = 0;
  std::thread held([&] {
    status = Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 2})")
                 .status;
  });
  ASSERT_TRUE(backend_->WaitTokenizeWaiters(1));
  auto second = std::async(std::launch::async, [&] {
    return Post("/v1/completions", R"({"prompt": "hello", "max_tokens": 2})");
  });
  const bool answered =
      second.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  backend_->HoldTokenize(false);
  ASSERT_TRUE(answered);
  ClientResponse r = second.get();
  ExpectError(r, 429);
  EXPECT_EQ(r.headers["retry-after"], "1");
  held.join();
  EXPECT_EQ(status, 200);
}

}  // namespace
}  // namespace weft::server::testing
