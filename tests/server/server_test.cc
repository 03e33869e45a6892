// Routes end to end over HTTP against the FakeBackend: shapes, streaming,
// n, echo, stop, logprobs, usage, keep-alive.
#include "tests/server/server_fixture.h"

namespace weft::server::testing {
namespace {

TEST_F(ServerTest, CompletionNonStreamed) {
  ClientResponse r = Post("/v1/completions",
                          R"({"model": "x", "prompt": "hello", "max_tokens": 4})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  json j = json::parse(r.body);
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  EXPECT_EQ(j["model"], "fake-model");
  EXPECT_TRUE(j["created"].is_number_integer());
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], FakeBackend::ExpectedText(0, 0, 4));
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 6);  // BOS + 5 bytes
  EXPECT_EQ(j["usage"]["completion_tokens"], 4);
  EXPECT_EQ(j["usage"]["total_tokens"], 10);
  EXPECT_EQ(j["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  // The backend got the plain struct.
  auto sub = backend_->submitted();
  ASSERT_EQ(sub.size(), 1u);
  EXPECT_EQ(sub[0].max_tokens, 4);
  EXPECT_EQ(sub[0].prompt_ids.size(), 6u);
}

TEST_F(ServerTest, CompletionDefaultMaxTokensIs16) {
  ClientResponse r = Post("/v1/completions", R"({"prompt": "a"})");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(json::parse(r.body)["usage"]["completion_tokens"], 16);
}

TEST_F(ServerTest, StreamedEqualsNonStreamed) {
  for (bool chat : {false, true}) {
    std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    std::string input = chat ? R"("messages": [{"role": "user", "content": "hi"}])"
                             : R"("prompt": "hi")";
    std::string common = "{" + input + R"(, "max_tokens": 6, "seed": 3, "n": 2)";
    ClientResponse full = Post(path, common + "}");
    ASSERT_EQ(full.status, 200) << full.body;
    json fj = json::parse(full.body);
    ClientResponse streamed = Post(path, common + R"(, "stream": true})");
    std::vector<json> chunks = Stream(streamed);
    std::vector<std::string> text(2);
    std::vector<std::string> finish(2);
    bool saw_role[2] = {false, false};
    for (const json& c : chunks) {
      EXPECT_EQ(c["object"], chat ? "chat.completion.chunk" : "text_completion");
      EXPECT_EQ(c["id"], chunks[0]["id"]);
      EXPECT_FALSE(c.contains("usage"));
      ASSERT_EQ(c["choices"].size(), 1u);
      const json& ch = c["choices"][0];
      int i = ch["index"];
      ASSERT_TRUE(i == 0 || i == 1);
      if (chat) {
        if (ch["delta"].contains("role")) {
          EXPECT_TRUE(text[i].empty());  // role comes first
          saw_role[i] = true;
        }
        if (ch["delta"].contains("content")) text[i] += ch["delta"]["content"];
      } else {
        text[i] += ch["text"];
      }
      if (!ch["finish_reason"].is_null()) {
        EXPECT_TRUE(finish[i].empty());
        finish[i] = ch["finish_reason"];
      }
    }
    for (int i = 0; i < 2; ++i) {
      const json& fc = fj["choices"][i];
      EXPECT_EQ(text[i], chat ? fc["message"]["content"] : fc["text"]);
      EXPECT_EQ(text[i], FakeBackend::ExpectedText(3, i, 6));
      EXPECT_EQ(finish[i], fc["finish_reason"]);
      if (chat) {
        EXPECT_TRUE(saw_role[i]);
      }
    }
  }
}

// A built-in template's stop string (ModelInfo::chat_stop, e.g. the plain
// template's "\nUser:") ends chat answers, and only chat answers.
TEST_F(ServerTest, ChatTemplateStopEndsChatAnswersOnly) {
  FakeBackendOptions options;
  options.chat_stop = {" fox"};
  server_.reset();
  StartServer({}, options);
  ClientResponse chat = Post("/v1/chat/completions", R"({
      "messages": [{"role": "user", "content": "hi"}], "max_tokens": 6,
      "seed": 0})");
  ASSERT_EQ(chat.status, 200) << chat.body;
  json c = json::parse(chat.body);
  EXPECT_EQ(c["choices"][0]["message"]["content"], "the quick brown");
  EXPECT_EQ(c["choices"][0]["finish_reason"], "stop");
  ClientResponse text = Post("/v1/completions", R"({
      "prompt": "hi", "max_tokens": 6, "seed": 0})");
  ASSERT_EQ(text.status, 200) << text.body;
  json t = json::parse(text.body);
  EXPECT_EQ(t["choices"][0]["text"], FakeBackend::ExpectedText(0, 0, 6));
}

TEST_F(ServerTest, StreamUsageChunk) {
  ClientResponse r = Post("/v1/chat/completions", R"({
      "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
      "stream": true, "stream_options": {"include_usage": true}})");
  std::vector<json> chunks = Stream(r);
  ASSERT_GE(chunks.size(), 3u);
  const json& last = chunks.back();
  EXPECT_TRUE(last["choices"].empty());
  EXPECT_EQ(last["usage"]["completion_tokens"], 3);
  EXPECT_EQ(last["usage"]["total_tokens"],
            last["usage"]["prompt_tokens"].get<int>() + 3);
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    EXPECT_TRUE(chunks[i].contains("usage") && chunks[i]["usage"].is_null());
  }
}

TEST_F(ServerTest, NChoicesAndMultiplePrompts) {
  ClientResponse r = Post("/v1/completions", R"({
      "prompt": ["a", "bb"], "n": 3, "max_tokens": 2})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  ASSERT_EQ(j["choices"].size(), 6u);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(j["choices"][i]["index"], i);
    EXPECT_EQ(j["choices"][i]["text"], FakeBackend::ExpectedText(0, i % 3, 2));
  }
  EXPECT_EQ(j["usage"]["prompt_tokens"], 2 + 3);
  EXPECT_EQ(j["usage"]["completion_tokens"], 12);
}

TEST_F(ServerTest, StopStringsAndEcho) {
  // Words: the quick brown fox ...; stop inside "brown".
  ClientResponse r = Post("/v1/completions", R"({
      "prompt": "P: ", "max_tokens": 8, "stop": ["own"], "echo": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], "P: the quick br");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "stop");
  // Streamed: same text, echo first.
  std::vector<json> chunks = Stream(Post("/v1/completions", R"({
      "prompt": "P: ", "max_tokens": 8, "stop": ["own"], "echo": true,
      "stream": true})"));
  std::string text;
  for (const json& c : chunks) text += c["choices"][0]["text"];
  EXPECT_EQ(text, "P: the quick br");
  EXPECT_EQ(chunks[0]["choices"][0]["text"], "P: ");
}

TEST_F(ServerTest, TokenIdPrompts) {
  ClientResponse r = Post("/v1/completions", R"({
      "prompt": [[1, 50], [1, 60, 61]], "max_tokens": 1, "echo": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  json j = json::parse(r.body);
  EXPECT_EQ(j["choices"][0]["text"], std::string(1, char(47)) + "the ");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 5);
}

TEST_F(ServerTest, Logprobs) {
  json c = json::parse(Post("/v1/completions", R"({
      "prompt": "x", "max_tokens": 2, "logprobs": 2})").body);
  const json& lp = c["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"the ", "quick "}));
  EXPECT_EQ(lp["text_offset"], json({0, 4}));
  EXPECT_EQ(lp["top_logprobs"][0].size(), 2u);
  EXPECT_FLOAT_EQ(lp["token_logprobs"][0].get<float>(), -0.5f);
  json ch = json::parse(Post("/v1/chat/completions", R"({
      "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
      "logprobs": true, "top_logprobs": 3})").body);
  const json& content = ch["choices"][0]["logprobs"]["content"];
  ASSERT_EQ(content.size(), 2u);
  EXPECT_EQ(content[0]["token"], "the ");
  EXPECT_EQ(content[0]["bytes"], json({116, 104, 101, 32}));
  EXPECT_EQ(content[0]["top_logprobs"].size(), 3u);
  // Streamed chat logprobs ride on the content chunks.
  std::vector<json> chunks = Stream(Post("/v1/chat/completions", R"({
      "messages": [{"role": "user", "content": "x"}], "max_tokens": 2,
      "logprobs": true, "stream": true})"));
  int with_lp = 0;
  for (const json& k : chunks) {
    if (!k["choices"][0]["logprobs"].is_null()) {
      with_lp += static_cast<int>(k["choices"][0]["logprobs"]["content"].size());
    }
  }
  EXPECT_EQ(with_lp, 2);
}

TEST_F(ServerTest, SamplingFieldsReachBackend) {
  ClientResponse r = Post("/v1/chat/completions", R"({
      "messages": [{"role": "system", "content": "s"},
                   {"role": "user", "content": "u"}],
      "max_completion_tokens": 2, "temperature": 0.3, "top_k": 5,
      "top_p": 0.5, "min_p": 0.1, "seed": 9, "presence_penalty": 1,
      "frequency_penalty": 0.5, "repetition_penalty": 1.2,
      "logit_bias": {"42": 5}, "ignore_eos": true, "stop": "zz",
      "stop_token_ids": [7], "priority": 2, "speculative": false})");
  ASSERT_EQ(r.status, 200) << r.body;
  auto sub = backend_->submitted();
  ASSERT_EQ(sub.size(), 1u);
  const GenerateRequest& g = sub[0];
  EXPECT_EQ(g.max_tokens, 2);
  EXPECT_FLOAT_EQ(g.sampling.temperature, 0.3f);
  EXPECT_EQ(g.sampling.top_k, 5);
  EXPECT_EQ(*g.sampling.seed, 9u);
  EXPECT_FLOAT_EQ(g.sampling.repetition_penalty, 1.2f);
  EXPECT_FLOAT_EQ(g.sampling.logit_bias.at(42), 5.0f);
  EXPECT_TRUE(g.ignore_eos);
  EXPECT_EQ(g.stop, std::vector<std::string>{"zz"});
  EXPECT_EQ(g.stop_token_ids, std::vector<int32_t>{7});
  EXPECT_EQ(g.priority, 2);
  EXPECT_EQ(g.speculative, std::optional<bool>(false));
  // Chat prompt = the template's text, tokenized without added specials,
  // after the model's BOS (id 1 here), which this template does not write.
  std::string templ = "<|system|>s\n<|user|>u\n<|assistant|>";
  ASSERT_EQ(g.prompt_ids.size(), templ.size() + 1);
  EXPECT_EQ(g.prompt_ids[0], 1);
  EXPECT_EQ(g.prompt_ids[1], '<' + 3);
}

TEST_F(ServerTest, ModelsHealthTokenize) {
  json m = json::parse(Get("/v1/models").body);
  EXPECT_EQ(m["object"], "list");
  EXPECT_EQ(m["data"][0]["id"], "fake-model");
  EXPECT_EQ(m["data"][0]["object"], "model");
  EXPECT_EQ(m["data"][0]["max_model_len"], 256);
  EXPECT_EQ(Get("/health").status, 200);
  EXPECT_EQ(Get("/health/live").status, 200);
  EXPECT_EQ(Get("/health/ready").status, 200);
  EXPECT_EQ(Get("/health/").status, 200);  // trailing slash tolerated
  json t = json::parse(Post("/tokenize", R"({"prompt": "ab"})").body);
  EXPECT_EQ(t["tokens"], json({1, 'a' + 3, 'b' + 3}));
  EXPECT_EQ(t["count"], 3);
  EXPECT_EQ(t["max_model_len"], 256);
  json t2 = json::parse(
      Post("/tokenize", R"({"content": "ab", "add_special": false})").body);
  EXPECT_EQ(t2["count"], 2);
  json t3 = json::parse(Post("/tokenize", R"({"messages":
      [{"role": "user", "content": "q"}]})").body);
  EXPECT_EQ(t3["count"], std::string("<|user|>q\n<|assistant|>").size());
  // Text and messages together are ambiguous: a 400 naming 'messages', also
  // when the messages are invalid or null.
  for (const char* body :
       {R"({"prompt": "ab", "messages": [{"role": "user", "content": "q"}]})",
        R"({"content": "ab", "messages": [{"role": "nobody"}]})",
        R"({"prompt": "ab", "messages": null})"}) {
    ClientResponse both = Post("/tokenize", body);
    EXPECT_EQ(both.status, 400) << body;
    EXPECT_EQ(json::parse(both.body)["error"]["param"], "messages") << body;
  }
  json d = json::parse(Post("/detokenize", R"({"tokens": [100, 101]})").body);
  EXPECT_EQ(d["prompt"], "ab");
}

TEST_F(ServerTest, EffectiveConfigHasAllKeys) {
  ClientResponse r = Get("/v1/effective-config");
  ASSERT_EQ(r.status, 200);
  json j = json::parse(r.body);
  const std::map<std::string, std::vector<std::string>> keys = {
      {"server", {"version", "build_commit", "pid", "start_time", "uptime_s"}},
      {"compute", {"isa_path", "threads"}},
      {"model", {"path", "size_bytes", "sha256", "architecture",
                 "quantization", "context_length", "parameter_count"}},
      {"scheduler", {"kind", "max_in_flight", "prefill_chunk_size",
                     "token_budget", "max_queue", "in_flight_now",
                     "peak_in_flight", "admission_ceiling_reason"}},
      {"kv", {"block_size", "blocks_total", "blocks_used", "blocks_cached",
              "bytes"}},
      {"counters", {"admission_rejections", "preemptions", "aborts"}}};
  for (const auto& [section, names] : keys) {
    ASSERT_TRUE(j.contains(section)) << section;
    for (const auto& k : names) {
      EXPECT_TRUE(j[section].contains(k)) << section << "." << k;
    }
  }
  EXPECT_TRUE(j["model"]["sha256"].is_null());  // the fake does not know
  EXPECT_EQ(j["model"]["context_length"], 256);
  EXPECT_EQ(j["scheduler"]["kind"], "fake");
  EXPECT_TRUE(j["server"]["pid"].is_number_integer());
}

TEST_F(ServerTest, MetricsAfterTraffic) {
  ASSERT_EQ(Post("/v1/completions", R"({"prompt": "a", "max_tokens": 3})").status,
            200);
  ClientResponse r = Get("/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"].rfind("text/plain", 0), 0u);
  const std::string& t = r.body;
  EXPECT_NE(t.find("vllm:generation_tokens_total{model_name=\"fake-model\"} 3\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("vllm:prompt_tokens_total{model_name=\"fake-model\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("vllm:request_success_total{finished_reason=\"length\","
                   "model_name=\"fake-model\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("vllm:time_to_first_token_seconds_count{model_name="
                   "\"fake-model\"} 1\n"),
            std::string::npos);
  EXPECT_NE(t.find("vllm:inter_token_latency_seconds_count{model_name="
                   "\"fake-model\"} 2\n"),
            std::string::npos);
  EXPECT_NE(t.find("# TYPE vllm:num_requests_running gauge\n"),
            std::string::npos);
  // Every non-comment line is "name[{labels}] value".
  size_t pos = 0;
  while (pos < t.size()) {
    size_t end = t.find('\n', pos);
    ASSERT_NE(end, std::string::npos);
    std::string line = t.substr(pos, end - pos);
    pos = end + 1;
    if (line[0] == '#') continue;
    size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    EXPECT_NO_THROW((void)std::stod(line.substr(sp + 1))) << line;
  }
}

TEST_F(ServerTest, KeepAliveServesSeveralRequests) {
  HttpConnection c(port_);
  ASSERT_TRUE(c.connected());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send("POST", "/v1/completions",
                       R"({"prompt": "a", "max_tokens": 2})"));
    ClientResponse r = c.Read();
    ASSERT_EQ(r.status, 200) << i;
    EXPECT_EQ(r.headers["connection"], "keep-alive");
    ASSERT_TRUE(c.Send("POST", "/v1/completions",
                       R"({"prompt": "a", "max_tokens": 2, "stream": true})"));
    ClientResponse s = c.Read();
    ASSERT_EQ(s.status, 200) << i;
    EXPECT_TRUE(s.chunked);
    ASSERT_TRUE(c.Send("GET", "/health", ""));
    EXPECT_EQ(c.Read().status, 200);
  }
  // Pipelined: two requests in one write.
  std::string two =
      "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
      "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_TRUE(c.SendRaw(two));
  EXPECT_EQ(c.Read().status, 200);
  ClientResponse m = c.Read();
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("fake-model"), std::string::npos);
}

TEST_F(ServerTest, ManyConcurrentStreams) {
  backend_->set_token_delay_ms(2);
  std::vector<std::unique_ptr<HttpConnection>> conns;
  for (int i = 0; i < 40; ++i) {
    conns.push_back(std::make_unique<HttpConnection>(port_));
    ASSERT_TRUE(conns.back()->Send(
        "POST", "/v1/completions",
        R"({"prompt": "a", "max_tokens": 5, "stream": true})"));
  }
  for (auto& c : conns) {
    std::vector<json> chunks = Stream(c->Read());
    std::string text;
    for (const json& k : chunks) text += k["choices"][0]["text"];
    EXPECT_EQ(text, FakeBackend::ExpectedText(0, 0, 5));
  }
}

}  // namespace
}  // namespace weft::server::testing
