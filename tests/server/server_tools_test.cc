// Tool calls and reasoning through the HTTP layer (FakeBackend writing a
// recorded model output): message.tool_calls and reasoning_content, the
// streamed delta shape, no markup in content, and what reaches the backend.
#include <string>

#include "tests/server/server_fixture.h"

namespace weft::server::testing {
namespace {

constexpr char kHermesCall[] =
    "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
    "{\"city\": \"Paris\"}}\n</tool_call>";
constexpr char kTools[] =
    R"("tools": [{"type": "function", "function": {"name": "get_weather",
       "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                      "required": ["city"]}}}])";

class ServerToolsTest : public ServerTest {
 protected:
  void SetUp() override {}
  void Start(const std::string& template_source, const std::string& script) {
    FakeBackendOptions options;
    options.chat_template_source = template_source;
    options.script = script;
    StartServer({}, options);
  }
  ClientResponse Chat(const std::string& extra) {
    return Post("/v1/chat/completions",
                R"({"messages": [{"role": "user", "content": "Weather in Paris?"}], )" + extra +
                    "}");
  }
};

// Folds a stream's chunks: content, reasoning, calls (name, arguments).
struct Folded {
  std::string content, reasoning;
  std::vector<std::pair<std::string, std::string>> calls;
  std::string finish;
};

Folded Fold(const std::vector<json>& chunks) {
  Folded f;
  for (const json& c : chunks) {
    if (c["choices"].empty()) continue;
    const json& ch = c["choices"][0];
    if (ch["finish_reason"].is_string()) f.finish = ch["finish_reason"];
    const json& d = ch["delta"];
    if (d.contains("content")) {
      const std::string piece = d["content"];
      EXPECT_EQ(piece.find('<'), std::string::npos) << piece;
      f.content += piece;
    }
    if (d.contains("reasoning_content")) f.reasoning += d["reasoning_content"].get<std::string>();
    if (!d.contains("tool_calls")) continue;
    const json& t = d["tool_calls"][0];
    const size_t index = t["index"];
    if (t.contains("id")) {
      EXPECT_EQ(index, f.calls.size());
      EXPECT_EQ(t["type"], "function");
      EXPECT_EQ(t["function"]["arguments"], "");
      EXPECT_TRUE(t["id"].get<std::string>().starts_with("call_"));
      f.calls.push_back({t["function"]["name"], ""});
    } else {
      EXPECT_EQ(index + 1, f.calls.size());
      f.calls.back().second += t["function"]["arguments"].get<std::string>();
    }
  }
  return f;
}

TEST_F(ServerToolsTest, HermesCallIsParsedWholeAndStreamed) {
  Start("{{ '<tool_call>' }}", kHermesCall);
  ClientResponse r = Chat(std::string(kTools));
  ASSERT_EQ(r.status, 200) << r.body;
  const json c = json::parse(r.body)["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls");
  EXPECT_EQ(c["message"]["content"], "Let me check.");
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  EXPECT_EQ(call["function"]["arguments"], R"({"city":"Paris"})");
  // auto: unconstrained, and control tokens' text is kept for the parser.
  ASSERT_EQ(backend_->submitted().size(), 1u);
  EXPECT_EQ(backend_->submitted()[0].sampling.structured.grammar, nullptr);
  EXPECT_TRUE(backend_->submitted()[0].render_special);

  const Folded f = Fold(Stream(Chat(std::string(kTools) + R"(, "stream": true)")));
  EXPECT_EQ(f.content, "Let me check.");
  ASSERT_EQ(f.calls.size(), 1u);
  EXPECT_EQ(f.calls[0].first, "get_weather");
  EXPECT_EQ(f.calls[0].second, R"({"city":"Paris"})");
  EXPECT_EQ(f.finish, "tool_calls");
}

TEST_F(ServerToolsTest, RequiredIsConstrainedAndNoneIsPlainContent) {
  Start("{{ '<tool_call>' }}", kHermesCall);
  ASSERT_EQ(Chat(std::string(kTools) + R"(, "tool_choice": "required")").status, 200);
  ASSERT_EQ(backend_->submitted().size(), 1u);
  EXPECT_NE(backend_->submitted()[0].sampling.structured.grammar, nullptr);
  ClientResponse none = Chat(std::string(kTools) + R"(, "tool_choice": "none")");
  ASSERT_EQ(none.status, 200);
  const json c = json::parse(none.body)["choices"][0];
  EXPECT_EQ(c["message"]["content"], kHermesCall);
  EXPECT_FALSE(c["message"].contains("tool_calls"));
  EXPECT_EQ(c["finish_reason"], "stop");
  EXPECT_FALSE(backend_->submitted()[1].render_special);
}

TEST_F(ServerToolsTest, MalformedCallFallsBackToContent) {
  const std::string bad = "Sure.\n<tool_call>\n{\"name\": \"get_weather\", {oops}\n</tool_call>";
  Start("{{ '<tool_call>' }}", bad);
  ClientResponse r = Chat(std::string(kTools));
  ASSERT_EQ(r.status, 200) << r.body;
  const json c = json::parse(r.body)["choices"][0];
  EXPECT_EQ(c["message"]["content"], bad);
  EXPECT_EQ(c["finish_reason"], "stop");
  const std::vector<json> chunks = Stream(Chat(std::string(kTools) + R"(, "stream": true)"));
  std::string content;
  for (const json& ch : chunks) {
    if (!ch["choices"].empty() && ch["choices"][0]["delta"].contains("content")) {
      content += ch["choices"][0]["delta"]["content"].get<std::string>();
    }
  }
  EXPECT_EQ(content, bad);
}

TEST_F(ServerToolsTest, ThinkingIsReasoningContent) {
  Start("{% if x %}<think>{% endif %}", "<think>Paris is in France.</think>\n\nIt is sunny.");
  ClientResponse r = Chat("\"max_tokens\": 64");
  ASSERT_EQ(r.status, 200) << r.body;
  const json m = json::parse(r.body)["choices"][0]["message"];
  EXPECT_EQ(m["reasoning_content"], "Paris is in France.");
  EXPECT_EQ(m["content"], "It is sunny.");
  const Folded f = Fold(Stream(Chat(R"("max_tokens": 64, "stream": true)")));
  EXPECT_EQ(f.reasoning, "Paris is in France.");
  EXPECT_EQ(f.content, "It is sunny.");
  EXPECT_EQ(f.finish, "stop");
}

TEST_F(ServerToolsTest, EffectiveConfigNamesTheFormat) {
  Start("[TOOL_CALLS]", "x");
  const json cfg = json::parse(Get("/v1/effective-config").body)["tool_calling"];
  EXPECT_EQ(cfg["format"], "mistral");
  EXPECT_TRUE(cfg["reasoning"].is_null());
}

}  // namespace
}  // namespace weft::server::testing
