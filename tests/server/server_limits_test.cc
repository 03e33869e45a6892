// Request limits (docs/reliability.md, "Limits") and the security
// properties: loopback bind by default, constant-time key comparison, no
// request field that reaches the file system or the server's settings.
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/openai_request.h"
#include "server/server_state.h"
#include "tests/server/server_fixture.h"

namespace weft::server::testing {
namespace {

ParseLimits WideLimits() {
  ParseLimits l;
  l.vocab_size = 5000;
  return l;
}

std::string Messages(int count) {
  json msgs = json::array();
  for (int i = 0; i < count; ++i) {
    msgs.push_back({{"role", i % 2 ? "assistant" : "user"}, {"content", "x"}});
  }
  return json({{"messages", msgs}}).dump();
}

std::string LogitBias(int entries) {
  json bias = json::object();
  for (int i = 0; i < entries; ++i) bias[std::to_string(i)] = 1;
  return json({{"prompt", "p"}, {"logit_bias", bias}}).dump();
}

void ExpectParam(const ApiResult<OpenAiRequest>& r, const char* param) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().http_status, 400);
  EXPECT_EQ(r.error().param, param) << r.error().message;
}

TEST(RequestLimitsTest, StopStringLength) {
  std::string ok(kMaxStopChars, 's');
  auto r = ParseCompletionRequest(
      json({{"prompt", "p"}, {"stop", {"a", ok}}}).dump(), WideLimits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().stop[1].size(), static_cast<size_t>(kMaxStopChars));
  // Characters, not bytes (as JSON Schema's maxLength counts): 1024 x "é"
  // is 2048 bytes and allowed.
  std::string accents;
  for (int i = 0; i < kMaxStopChars; ++i) accents += "\xc3\xa9";
  EXPECT_TRUE(ParseCompletionRequest(
                  json({{"prompt", "p"}, {"stop", accents}}).dump(),
                  WideLimits())
                  .ok());
  ExpectParam(ParseCompletionRequest(
                  json({{"prompt", "p"}, {"stop", accents + "\xc3\xa9"}}).dump(),
                  WideLimits()),
              "stop");
  ExpectParam(ParseCompletionRequest(
                  json({{"prompt", "p"}, {"stop", ok + "s"}}).dump(),
                  WideLimits()),
              "stop");
  json many = json::array();
  for (int i = 0; i <= kMaxStopStrings; ++i) many.push_back("x");
  ExpectParam(ParseChatRequest(
                  json({{"messages", {{{"role", "user"}, {"content", "x"}}}},
                        {"stop", many}}).dump(),
                  WideLimits()),
              "stop");
}

TEST(RequestLimitsTest, LogitBiasEntries) {
  auto r = ParseCompletionRequest(LogitBias(kMaxLogitBiasEntries), WideLimits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().sampling.logit_bias.size(),
            static_cast<size_t>(kMaxLogitBiasEntries));
  ExpectParam(ParseCompletionRequest(LogitBias(kMaxLogitBiasEntries + 1),
                                     WideLimits()),
              "logit_bias");
}

TEST(RequestLimitsTest, MessageCount) {
  auto r = ParseChatRequest(Messages(kMaxMessages), WideLimits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().chat_request.messages.size(),
            static_cast<size_t>(kMaxMessages));
  ExpectParam(ParseChatRequest(Messages(kMaxMessages + 1), WideLimits()),
              "messages");
  // /tokenize shares the message parser, hence the cap.
  auto t = ParseTokenizeRequest(Messages(kMaxMessages + 1));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().param, "messages");
}

TEST(RequestLimitsTest, SequencesPerRequest) {
  ParseLimits l = WideLimits();
  l.max_n = 16;
  l.max_sequences = 64;
  auto prompts = [](int k, int n) {
    json p = json::array();
    for (int i = 0; i < k; ++i) p.push_back("p");
    return json({{"prompt", p}, {"n", n}}).dump();
  };
  EXPECT_TRUE(ParseCompletionRequest(prompts(4, 16), l).ok());
  EXPECT_TRUE(ParseCompletionRequest(prompts(64, 1), l).ok());
  ExpectParam(ParseCompletionRequest(prompts(5, 13), l), "n");
  ExpectParam(ParseCompletionRequest(prompts(65, 1), l), "n");
  // Prompt count keeps its own, earlier cap.
  ExpectParam(ParseCompletionRequest(prompts(kMaxPrompts + 1, 1), WideLimits()),
              "prompt");
  l.max_n = 128;
  const std::string chat = R"({"messages": [{"role": "user", "content": "x"}],
                               "n": 100})";
  ExpectParam(ParseChatRequest(chat, l), "n");
  l.max_sequences = 100;
  EXPECT_TRUE(ParseChatRequest(chat, l).ok());
}

// The same limits over HTTP: 400 with an OpenAI error body naming the param.
TEST_F(ServerTest, LimitsOverHttp) {
  ExpectError(Post("/v1/completions",
                   json({{"prompt", "p"},
                         {"stop", std::string(kMaxStopChars + 1, 's')}})
                       .dump()),
              400, "stop");
  ExpectError(Post("/v1/completions", LogitBias(kMaxLogitBiasEntries + 1)),
              400, "logit_bias");
  ExpectError(Post("/v1/chat/completions", Messages(kMaxMessages + 1)), 400,
              "messages");
  json p = json::array();
  for (int i = 0; i < 17; ++i) p.push_back("p");
  ExpectError(Post("/v1/completions", json({{"prompt", p}, {"n", 16}}).dump()),
              400, "n");
  EXPECT_EQ(Post("/v1/completions",
                 json({{"prompt", "p"}, {"stop", std::string(kMaxStopChars, 's')},
                       {"max_tokens", 2}}).dump())
                .status,
            200);
  json cfg = json::parse(Get("/v1/effective-config").body);
  EXPECT_EQ(cfg["server"]["max_sequences"], 256);
  EXPECT_EQ(cfg["server"]["max_request_seconds"], 0);
}

TEST_F(ServerTest, RequestTimeCapAbortsWithFinishReasonAbort) {
  ServerConfig c;
  c.max_request_seconds = 0.3;
  FakeBackendOptions o;
  o.token_delay_ms = 20;
  server_.reset();
  StartServer(c, o);
  ClientResponse r = Post("/v1/completions",
                          R"({"prompt": "a", "max_tokens": 200, "n": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 2u);
  for (const json& ch : j["choices"]) EXPECT_EQ(ch["finish_reason"], "abort");
  EXPECT_LT(j["usage"]["completion_tokens"].get<int>(), 400);
  EXPECT_EQ(backend_->aborted_ids().size(), 1u);

  // Streamed: the stream ends properly, with the abort reason.
  ClientResponse s = Post("/v1/chat/completions",
                          R"({"messages": [{"role": "user", "content": "x"}],
                              "max_tokens": 200, "stream": true})");
  std::vector<json> chunks = Stream(s);
  ASSERT_FALSE(chunks.empty());
  EXPECT_EQ(chunks.back()["choices"][0]["finish_reason"], "abort");

  // A request that ends in time is untouched, and so is the next request on
  // the same connection (the timer belongs to one request).
  HttpConnection conn(port_);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(conn.Send("POST", "/v1/completions",
                          R"({"prompt": "a", "max_tokens": 3})"));
    ClientResponse q = conn.Read();
    ASSERT_EQ(q.status, 200) << q.body;
    EXPECT_EQ(json::parse(q.body)["choices"][0]["finish_reason"], "length");
  }
  EXPECT_EQ(backend_->aborted_ids().size(), 2u);
}

TEST(SecurityTest, ApiKeyComparison) {
  EXPECT_TRUE(ConstantTimeEquals("", ""));
  EXPECT_TRUE(ConstantTimeEquals("sekret", "sekret"));
  EXPECT_FALSE(ConstantTimeEquals("sekret", "sekreT"));
  EXPECT_FALSE(ConstantTimeEquals("sekret", "Sekret"));
  EXPECT_FALSE(ConstantTimeEquals("sekret", "sekret2"));
  EXPECT_FALSE(ConstantTimeEquals("sekret", "sekre"));
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals(std::string("a\0b", 3), "a"));
}

// An IPv4 address of this machine other than loopback, or "".
std::string NonLoopbackAddress() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string out;
  for (ifaddrs* a = list; a && out.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
    auto* in = reinterpret_cast<sockaddr_in*>(a->ifa_addr);
    if ((ntohl(in->sin_addr.s_addr) >> 24) == 127) continue;
    char buf[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &in->sin_addr, buf, sizeof buf)) out = buf;
  }
  freeifaddrs(list);
  return out;
}

bool CanConnect(const std::string& ip, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

TEST_F(ServerTest, BindsLoopbackByDefault) {
  EXPECT_EQ(ServerConfig().host, "127.0.0.1");
  EXPECT_TRUE(CanConnect("127.0.0.1", port_));
  json cfg = json::parse(Get("/v1/effective-config").body);
  EXPECT_EQ(cfg["server"]["host"], "127.0.0.1");
  std::string other = NonLoopbackAddress();
  if (other.empty()) GTEST_SKIP() << "no non-loopback IPv4 address here";
  EXPECT_FALSE(CanConnect(other, port_)) << "reachable on " << other;
}

// `model` is only a label: a path there opens nothing and changes nothing;
// unknown fields (e.g. a template or a model path) are ignored; no route
// accepts a method that could change settings.
TEST_F(ServerTest, RequestsCannotNameFilesOrChangeSettings) {
  ClientResponse r = Post("/v1/completions",
                          R"({"prompt": "a", "max_tokens": 1,
                              "model": "/etc/passwd",
                              "chat_template": "/etc/shadow",
                              "model_path": "/etc/passwd",
                              "kv_memory": "1T", "max_n": 1000})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["model"], "fake-model");
  EXPECT_EQ(r.body.find("root:"), std::string::npos);
  ExpectError(Post("/v1/completions", R"({"prompt": "a", "n": 17})"), 400, "n");
  for (const char* method : {"PUT", "PATCH", "DELETE"}) {
    ExpectError(Fetch(port_, method, "/v1/effective-config", "{}"), 405);
  }
  json models = json::parse(Get("/v1/models").body);
  EXPECT_EQ(models["data"][0]["id"], "fake-model");
}

}  // namespace
}  // namespace weft::server::testing
