// Forced tool calls (server/tool_request.h): for every format, the
// constraint accepts a call written the format's way, which the parser
// (tool_calls.h) then reads back, and rejects calls to other tools or with
// arguments outside the schema.
#include "server/tool_request.h"

#include <gtest/gtest.h>

#include "sampling/grammar.h"

namespace weft::server {
namespace {

using F = ToolCallFormat;

ToolRequest Weather(ToolChoice choice) {
  ToolRequest t;
  t.tools = {{"get_weather", "Current weather",
              R"({"type":"object","properties":{"city":{"type":"string"}},)"
              R"("required":["city"],"additionalProperties":false})"},
             {"noop", "", ""}};
  t.choice = choice;
  if (choice == ToolChoice::kNamed) t.named = "get_weather";
  return t;
}

struct FormatCase {
  F format;
  std::string call;   // one get_weather call, city "Paris"
  std::string other;  // something the constraint must reject
};

std::vector<FormatCase> Cases() {
  const std::string obj = R"({"name": "get_weather", "arguments": {"city": "Paris"}})";
  const std::string bad = R"({"name": "get_weather", "arguments": {"town": "Paris"}})";
  return {
      {F::kGeneric, R"({"tool_calls": [)" + obj + "]}", R"({"tool_calls": [)" + bad + "]}"},
      {F::kHermes, "<tool_call>\n" + obj + "\n</tool_call>", "<tool_call>\n" + bad + "\n</tool_call>"},
      {F::kLlama3, R"({"name": "get_weather", "parameters": {"city": "Paris"}})", obj},
      {F::kMistral, "[TOOL_CALLS][" + obj + "]", "[TOOL_CALLS][" + bad + "]"},
      {F::kFunctionaryV31, R"(<function=get_weather>{"city": "Paris"}</function>)",
       R"(<function=get_weather>{"town": "Paris"}</function>)"},
      {F::kFunctionaryV32, "get_weather\n{\"city\": \"Paris\"}", "all\nHello"},
      {F::kFirefunction, " functools[" + obj + "]", " functools[" + bad + "]"},
      {F::kCommandR7b,
       R"(<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|>)",
       "<|START_RESPONSE|>Hi<|END_RESPONSE|>"},
      {F::kDeepSeekR1,
       "</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n"
       "```json\n{\"city\": \"Paris\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "Thinking...</think>\n\nHi"},
  };
}

class ToolConstraintTest : public ::testing::TestWithParam<FormatCase> {};

TEST_P(ToolConstraintTest, ForcedCallParsesBack) {
  const FormatCase& c = GetParam();
  for (ToolChoice choice : {ToolChoice::kRequired, ToolChoice::kNamed}) {
    const ToolRequest t = Weather(choice);
    const bool think = c.format == F::kDeepSeekR1;
    auto out = ToolConstraint(t, c.format, think ? "</think>" : "");
    ASSERT_TRUE(out.ok()) << out.error().message;
    const sampling::Grammar& g = *out.value().grammar;
    EXPECT_TRUE(g.Matches(c.call)) << ToolCallFormatName(c.format);
    EXPECT_FALSE(g.Matches(c.other)) << ToolCallFormatName(c.format);
    EXPECT_FALSE(g.Matches("Hello")) << ToolCallFormatName(c.format);

    ParserOptions o;
    o.format = c.format;
    if (think) {
      o.think_open = "<think>";
      o.think_close = "</think>";
      o.start_in_reasoning = true;
    }
    const ParsedOutput p = ParseToolCalls(o, c.call);
    ASSERT_EQ(p.calls.size(), 1u) << ToolCallFormatName(c.format);
    EXPECT_EQ(p.calls[0].name, "get_weather");
    EXPECT_EQ(p.calls[0].arguments, R"({"city":"Paris"})");
    EXPECT_EQ(p.content, "");
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ToolConstraintTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) {
                           std::string n = ToolCallFormatName(info.param.format);
                           for (char& ch : n) ch = (ch == '.') ? '_' : ch;
                           return n;
                         });

TEST(ToolConstraintTest, AutoIsUnconstrainedExceptGeneric) {
  EXPECT_EQ(ToolConstraint(Weather(ToolChoice::kAuto), F::kHermes, "").value().grammar, nullptr);
  auto generic = ToolConstraint(Weather(ToolChoice::kAuto), F::kGeneric, "");
  ASSERT_TRUE(generic.ok());
  ASSERT_NE(generic.value().grammar, nullptr);
  EXPECT_TRUE(generic.value().grammar->Matches(R"({"response": "Hello"})"));
  EXPECT_FALSE(
      ToolConstraint(Weather(ToolChoice::kRequired), F::kGeneric, "")
          .value()
          .grammar->Matches(R"({"response": "Hello"})"));
}

TEST(ToolConstraintTest, NotParallelMeansOneCall) {
  ToolRequest t = Weather(ToolChoice::kRequired);
  t.parallel = false;
  auto out = ToolConstraint(t, F::kHermes, "");
  ASSERT_TRUE(out.ok());
  const std::string one = "<tool_call>\n{\"name\": \"noop\", \"arguments\": {}}\n</tool_call>";
  EXPECT_TRUE(out.value().grammar->Matches(one));
  EXPECT_FALSE(out.value().grammar->Matches(one + "\n" + one));
}

TEST(ToolConstraintTest, UnsupportedSchemaIs400) {
  ToolRequest t;
  t.tools = {{"f", "", R"({"type":"object","patternProperties":{"^a":{}}})"}};
  t.choice = ToolChoice::kRequired;
  auto out = ToolConstraint(t, F::kHermes, "");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().http_status, 400);
  EXPECT_NE(out.error().message.find("patternProperties"), std::string::npos);
}

TEST(ToolConstraintTest, GenericPromptJoinsTheSystemMessage) {
  ChatTemplateRequest c;
  c.messages = {{"system", "Be brief.", {}, {}, {}}, {"user", "hi", {}, {}, {}}};
  AddGenericToolPrompt(Weather(ToolChoice::kAuto), true, &c);
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_TRUE(c.messages[0].content->starts_with("Be brief.\n\nYou can call"));
  EXPECT_NE(c.messages[0].content->find(R"("name":"get_weather","description":"Current weather")"),
            std::string::npos);
  ChatTemplateRequest d;
  d.messages = {{"user", "hi", {}, {}, {}}};
  ChatTemplateRequest e = d;
  AddGenericToolPrompt(Weather(ToolChoice::kRequired), true, &d);
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[0].role, "system");
  // A template without a system role (Gemma): the first message carries it.
  AddGenericToolPrompt(Weather(ToolChoice::kRequired), false, &e);
  ASSERT_EQ(e.messages.size(), 1u);
  EXPECT_TRUE(e.messages[0].content->starts_with("You can call"));
  EXPECT_TRUE(e.messages[0].content->ends_with("\n\nhi"));
}

TEST(ToolConstraintTest, GenericWritesToolTurnsAsText) {
  ChatTemplateRequest c;
  ChatMessage call{"assistant", std::nullopt, {}, {}, {}};
  call.tool_calls = {{"call_1", "function", "get_weather", R"({"city": "Paris"})"}};
  c.messages = {{"user", "hi", {}, {}, {}}, call, {"tool", "21C", {}, {}, "call_1"}};
  ToolTurnsAsText(&c);
  ASSERT_TRUE(c.messages[1].content.has_value());
  EXPECT_EQ(*c.messages[1].content,
            R"({"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]})");
  EXPECT_TRUE(c.messages[1].tool_calls.empty());
  EXPECT_EQ(c.messages[2].role, "user");
  EXPECT_EQ(*c.messages[2].content,
            R"({"tool_response":{"tool_call_id":"call_1","content":"21C"}})");
}

TEST(ToolConstraintTest, FirefunctionVariables) {
  ChatTemplateRequest c;
  c.tools_json = R"([{"type":"function"}])";
  AddFirefunctionVariables(&c);
  EXPECT_EQ(c.kwargs_json.at("functions"), R"("[\n  {\n    \"type\": \"function\"\n  }\n]")");
  EXPECT_TRUE(c.kwargs_json.at("datetime").ends_with(R"( GMT")"));
}

}  // namespace
}  // namespace weft::server
