// CompileToolCallGrammar (sampling/tool_call_grammar.h) and
// GrammarBuilder::Import: literal frames around JSON Schema grammars.
#include "sampling/tool_call_grammar.h"

#include <gtest/gtest.h>

#include "sampling/grammar_cache.h"

namespace weft::sampling {
namespace {

const char* kWeather =
    R"({"type": "object", "properties": {"name": {"type": "string", "const": "get_weather"},)"
    R"( "arguments": {"type": "object", "properties": {"city": {"type": "string"}},)"
    R"( "required": ["city"], "additionalProperties": false}},)"
    R"( "required": ["name", "arguments"], "additionalProperties": false})";

TEST(ToolCallGrammarTest, ImportKeepsTheLanguage) {
  auto inner = CompileConstraint(ConstraintKind::kJsonSchema, R"({"type": "integer"})");
  ASSERT_TRUE(inner.ok());
  GrammarBuilder b;
  GrammarSeq seq = b.Literal("<");
  seq.push_back(b.Ref(b.Import(**inner)));
  GrammarSeq close = b.Literal(">");
  seq.insert(seq.end(), close.begin(), close.end());
  b.SetRoot(b.AddRule("root", {seq}));
  auto g = std::move(b).Build();
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE((*g)->Matches("<42>"));
  EXPECT_TRUE((*g)->Matches("< -7>"));
  EXPECT_FALSE((*g)->Matches("<4.5>"));
  EXPECT_FALSE((*g)->Matches("42"));
}

TEST(ToolCallGrammarTest, HermesFramesAndParallelCalls) {
  ToolCallGrammarSpec spec;
  spec.calls.push_back(FramedJson{"<tool_call>\n", kWeather, "\n</tool_call>"});
  spec.separator = std::string("\n");
  spec.max_calls = 2;
  auto g = CompileToolCallGrammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().message();
  const std::string one =
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>";
  EXPECT_TRUE((*g)->Matches(one));
  EXPECT_TRUE((*g)->Matches(one + "\n" + one));
  EXPECT_FALSE((*g)->Matches(one + "\n" + one + "\n" + one));  // max_calls
  EXPECT_FALSE((*g)->Matches(
      "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE((*g)->Matches(
      "<tool_call>\n{\"name\": \"other\", \"arguments\": {\"city\": \"x\"}}\n</tool_call>"));
  EXPECT_FALSE((*g)->Matches("Sure! " + one));
}

TEST(ToolCallGrammarTest, AlternativesAndListFrames) {
  ToolCallGrammarSpec spec;
  spec.begin = std::string("[TOOL_CALLS][");
  spec.calls = {{"", kWeather, ""}, {"", R"({"type": "object", "properties": {"name": {"const": "noop"}}, "required": ["name"], "additionalProperties": false})", ""}};
  spec.separator = std::string(", ");
  spec.end = std::string("]");
  spec.max_calls = 4;
  auto g = CompileToolCallGrammar(spec);
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_TRUE((*g)->Matches(R"([TOOL_CALLS][{"name": "noop"}, {"name": "get_weather", "arguments": {"city": "x"}}])"));
  EXPECT_FALSE((*g)->Matches(R"([TOOL_CALLS][])"));
  // Cached by the spec's text: the same grammar again.
  auto again = CompileToolCallGrammar(spec);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(g->get(), again->get());
}

TEST(ToolCallGrammarTest, RejectsWhatTheSchemaCompilerRejects) {
  ToolCallGrammarSpec spec;
  spec.calls = {{"", R"({"type": "object", "patternProperties": {}})", ""}};
  auto g = CompileToolCallGrammar(spec);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("patternProperties"), std::string::npos);
  EXPECT_FALSE(CompileToolCallGrammar(ToolCallGrammarSpec{}).ok());
}

}  // namespace
}  // namespace weft::sampling
