// Tool-call and reasoning parsing (server/tool_calls.h): recorded outputs
// of every format give the expected calls or fall back to content, and the
// stream parser gives the same result for every split of the text.
#include "server/tool_calls.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace weft::server {
namespace {

using F = ToolCallFormat;

struct Call {
  std::string name;
  std::string arguments;
};

struct Case {
  Case(std::string l, F f, std::string t, std::string c, std::vector<Call> cs, std::string r = "",
       bool th = false, bool sr = false)
      : label(std::move(l)), format(f), text(std::move(t)), content(std::move(c)),
        calls(std::move(cs)), reasoning(std::move(r)), think(th), start_in_reasoning(sr) {}
  std::string label;
  F format;
  std::string text;
  std::string content;  // expected
  std::vector<Call> calls;
  std::string reasoning;
  bool think = false;             // <think> reasoning on
  bool start_in_reasoning = false;
};

ParserOptions Options(const Case& c) {
  ParserOptions o;
  o.format = c.format;
  if (c.think) {
    o.think_open = c.format == F::kCommandR7b ? "<|START_THINKING|>" : "<think>";
    o.think_close = c.format == F::kCommandR7b ? "<|END_THINKING|>" : "</think>";
  }
  o.start_in_reasoning = c.start_in_reasoning;
  auto n = std::make_shared<int>(0);
  o.new_id = [n] { return "call_" + std::to_string((*n)++); };
  return o;
}

const std::string kW = R"({"location": "Paris", "unit": "c"})";
const std::string kWc = R"({"location":"Paris","unit":"c"})";  // compact
// Arguments longer than ToolCallStreamParser::kEagerBlockBytes.
const std::string kLong = "{\"text\":\"" + std::string(10000, 'x') + "\"}";

std::vector<Case> Cases() {
  return {
      // Hermes / Qwen 2.5.
      {"hermes_one", F::kHermes,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + kW + "}\n</tool_call>", "",
       {{"get_weather", kWc}}},
      {"hermes_text_around", F::kHermes,
       "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + kW +
           "}\n</tool_call>\nDone.",
       "Let me check.\nDone.", {{"get_weather", kWc}}},
      {"hermes_two", F::kHermes,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n"
       "{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>",
       "", {{"a", "{}"}, {"b", R"({"x":[1,2]})"}}},
      {"hermes_unclosed_at_end", F::kHermes,
       "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"s\": \"}<\"}}", "", {{"a", R"({"s":"}<"})"}}},
      {"hermes_long", F::kHermes,
       "a <tool_call>{\"name\": \"w\", \"arguments\": " + kLong + "}</tool_call> b", "a b",
       {{"w", kLong}}},
      {"llama_long", F::kLlama3, "{\"name\": \"w\", \"parameters\": " + kLong + "}", "",
       {{"w", kLong}}},
      {"hermes_malformed", F::kHermes,
       "Sure <tool_call>\n{\"name\": \"a\", \"arguments\": {x}}\n</tool_call>",
       "Sure <tool_call>\n{\"name\": \"a\", \"arguments\": {x}}\n</tool_call>", {}},
      {"hermes_cut_short", F::kHermes,
       "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"argum", "Checking.", {}},
      {"hermes_no_call", F::kHermes, "The weather is fine. <tool", "The weather is fine. <tool", {}},
      {"hermes_string_arguments", F::kHermes,
       "<tool_call>{\"name\": \"a\", \"arguments\": \"{\\\"k\\\": 1}\"}</tool_call>", "",
       {{"a", R"({"k":1})"}}},
      // Llama 3.1-3.3.
      {"llama_json", F::kLlama3, "{\"name\": \"get_weather\", \"parameters\": " + kW + "}", "",
       {{"get_weather", kWc}}},
      {"llama_json_type", F::kLlama3,
       "  {\"type\": \"function\", \"name\": \"f\", \"parameters\": {}}", "", {{"f", "{}"}}},
      {"llama_two", F::kLlama3,
       "{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {\"y\": 2}}", "",
       {{"a", "{}"}, {"b", R"({"y":2})"}}},
      {"llama_python_tag_json", F::kLlama3,
       "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": " + kW + "}", "",
       {{"get_weather", kWc}}},
      {"llama_python_code", F::kLlama3, "<|python_tag|>print(1)", "",
       {{"python", R"x({"code":"print(1)"})x"}}},
      {"llama_plain_json_is_content", F::kLlama3, "{\"answer\": 42}", "{\"answer\": 42}", {}},
      {"llama_text", F::kLlama3, "Hello {not json", "Hello {not json", {}},
      {"llama_malformed", F::kLlama3, "{\"name\": \"a\", \"parameters\": {]}",
       "{\"name\": \"a\", \"parameters\": {]}", {}},
      // Mistral Nemo.
      {"mistral_two", F::kMistral,
       "[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {\"q\": \"x\"}, \"id\": \"abcdefghi\"}, "
       "{\"name\": \"b\", \"arguments\": {}}]",
       "", {{"a", R"({"q":"x"})"}, {"b", "{}"}}},
      {"mistral_text_before", F::kMistral,
       "Calling.[TOOL_CALLS][{\"name\": \"a\", \"arguments\": {}}]", "Calling.", {{"a", "{}"}}},
      {"mistral_malformed", F::kMistral, "[TOOL_CALLS][{\"name\": 3, \"arguments\": {}}]",
       "[TOOL_CALLS][{\"name\": 3, \"arguments\": {}}]", {}},
      // Functionary v3.1.
      {"functionary31", F::kFunctionaryV31,
       "<function=get_weather>" + kW + "</function>", "", {{"get_weather", kWc}}},
      {"functionary31_text_two", F::kFunctionaryV31,
       "Ok. <function=a>{}</function><function=b>{\"z\": null}</function>", "Ok.",
       {{"a", "{}"}, {"b", R"({"z":null})"}}},
      {"functionary31_malformed", F::kFunctionaryV31, "<function=a>{oops}</function>",
       "<function=a>{oops}</function>", {}},
      // Functionary v3.2 (the prompt ends with ">>>").
      {"functionary32_call", F::kFunctionaryV32, "get_weather\n" + kW, "", {{"get_weather", kWc}}},
      {"functionary32_all_then_call", F::kFunctionaryV32,
       "all\nLet me look.>>>get_weather\n" + kW + ">>>b\n{}", "Let me look.",
       {{"get_weather", kWc}, {"b", "{}"}}},
      {"functionary32_all", F::kFunctionaryV32, "all\nHello there", "Hello there", {}},
      {"functionary32_python", F::kFunctionaryV32, "python\nprint(2)", "",
       {{"python", R"x({"code":"print(2)"})x"}}},
      {"functionary32_malformed", F::kFunctionaryV32, "a\n{\"x\": }", "a\n{\"x\": }", {}},
      // Firefunction v2.
      {"firefunction", F::kFirefunction,
       " functools[{\"name\": \"a\", \"arguments\": {\"n\": 1}}, {\"name\": \"b\", "
       "\"arguments\": {}}]",
       "", {{"a", R"({"n":1})"}, {"b", "{}"}}},
      {"firefunction_text", F::kFirefunction, "No tools needed.", "No tools needed.", {}},
      // Command R7B.
      {"command_r7b", F::kCommandR7b,
       "<|START_THINKING|>I need the weather.<|END_THINKING|><|START_ACTION|>[\n"
       "    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": " + kW +
           "}\n]<|END_ACTION|>",
       "", {{"get_weather", kWc}}, "I need the weather.", true},
      {"command_r7b_response", F::kCommandR7b,
       "<|START_RESPONSE|>Hello!<|END_RESPONSE|>", "Hello!", {}, "", true},
      // DeepSeek R1 (the prompt opens <think>).
      {"deepseek_r1_call", F::kDeepSeekR1,
       "Need weather.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
       "get_weather\n```json\n" + kW + "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
       "", {{"get_weather", kWc}}, "Need weather.\n", true, true},
      {"deepseek_r1_answer", F::kDeepSeekR1, "Hmm, 2+2.</think>\n\nIt is 4.", "It is 4.", {},
       "Hmm, 2+2.", true, true},
      {"think_unfinished", F::kHermes, "<think>still thinking", "", {}, "still thinking", true},
      {"think_not_at_start", F::kHermes, "a <think>b</think>", "a <think>b</think>", {}, "", true},
      // Generic (no template support).
      {"generic_calls", F::kGeneric,
       "{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {\"k\": \"v\"}}, {\"name\": \"b\", "
       "\"arguments\": {}}]}",
       "", {{"a", R"({"k":"v"})"}, {"b", "{}"}}},
      {"generic_call", F::kGeneric, "{\"tool_call\": {\"name\": \"a\", \"arguments\": {}}}", "",
       {{"a", "{}"}}},
      {"generic_response", F::kGeneric, "{\"response\": \"Hi <tool_call> there\"}",
       "Hi <tool_call> there", {}},
      {"generic_response_escapes", F::kGeneric,
       R"({"response": "a\"b\\n\u00e9\ud83d\ude00 <x>"} )", "a\"b\\n\u00e9\U0001F600 <x>", {}},
      {"generic_response_cut_short", F::kGeneric, R"( {"response" : "Hello wor\u00)", "Hello wor",
       {}},
      {"generic_responses_key", F::kGeneric, R"({"responses": 1})", R"({"responses": 1})", {}},
      {"functionary32_cut_short", F::kFunctionaryV32, "all\nHi>>>get_weather\n{\"city", "Hi", {}},
      {"generic_text", F::kGeneric, "Just text.", "Just text.", {}},
      {"generic_other_json", F::kGeneric, "{\"a\": 1}", "{\"a\": 1}", {}},
      {"generic_malformed", F::kGeneric, "{\"tool_call\": {\"name\": ", "{\"tool_call\": {\"name\": ",
       {}},
  };
}

class ToolCallsTest : public ::testing::TestWithParam<Case> {};

void ExpectResult(const Case& c, const ParsedOutput& got, const std::string& how) {
  EXPECT_EQ(got.content, c.content) << how;
  EXPECT_EQ(got.reasoning, c.reasoning) << how;
  ASSERT_EQ(got.calls.size(), c.calls.size()) << how;
  for (size_t i = 0; i < c.calls.size(); ++i) {
    EXPECT_EQ(got.calls[i].name, c.calls[i].name) << how;
    EXPECT_EQ(got.calls[i].arguments, c.calls[i].arguments) << how;
    EXPECT_EQ(got.calls[i].id, "call_" + std::to_string(i)) << how;
  }
}

// Feeds `text` in pieces ending at `cuts`; checks the event stream's shape.
ParsedOutput Stream(const Case& c, const std::vector<size_t>& cuts) {
  ToolCallStreamParser p(Options(c));
  std::vector<OutputEvent> all;
  size_t from = 0;
  for (size_t cut : cuts) {
    for (OutputEvent& e : p.Push(std::string_view(c.text).substr(from, cut - from))) {
      all.push_back(std::move(e));
    }
    from = cut;
  }
  for (OutputEvent& e : p.Finish()) all.push_back(std::move(e));
  int open = -1, next = 0;
  for (const OutputEvent& e : all) {
    if (e.kind == OutputEvent::Kind::kCallStart) {
      EXPECT_EQ(open, -1);
      EXPECT_EQ(e.index, next);
      open = next++;
    } else if (e.kind == OutputEvent::Kind::kArguments) {
      EXPECT_EQ(e.index, open);
    } else if (e.kind == OutputEvent::Kind::kCallEnd) {
      EXPECT_EQ(e.index, open);
      open = -1;
    } else {
      EXPECT_FALSE(e.text.empty());
    }
  }
  EXPECT_EQ(open, -1);
  ParsedOutput out;
  ApplyEvents(all, &out);
  return out;
}

TEST_P(ToolCallsTest, WholeText) {
  const Case& c = GetParam();
  ExpectResult(c, ParseToolCalls(Options(c), c.text), "whole");
}

TEST_P(ToolCallsTest, ByteByByte) {
  const Case& c = GetParam();
  std::vector<size_t> cuts;
  for (size_t i = 1; i <= c.text.size(); ++i) cuts.push_back(i);
  ExpectResult(c, Stream(c, cuts), "byte by byte");
}

TEST_P(ToolCallsTest, RandomChunks) {
  const Case& c = GetParam();
  std::mt19937 rng(7);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<size_t> cuts;
    std::uniform_int_distribution<size_t> len(1, 12);
    for (size_t at = len(rng); at < c.text.size(); at += len(rng)) cuts.push_back(at);
    cuts.push_back(c.text.size());
    ExpectResult(c, Stream(c, cuts), "trial " + std::to_string(trial));
  }
}

// Content never carries a marker of a call that parsed.
TEST_P(ToolCallsTest, NoMarkupInContent) {
  const Case& c = GetParam();
  if (c.calls.empty()) return;
  const ParsedOutput out = ParseToolCalls(Options(c), c.text);
  for (const char* m : {"<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<function=", ">>>",
                        "functools", "<|START_ACTION|>", "<|python_tag|>", "tool▁call",
                        "<think>", "</think>", "\"name\""}) {
    EXPECT_EQ(out.content.find(m), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, ToolCallsTest, ::testing::ValuesIn(Cases()),
                         [](const auto& info) { return info.param.label; });

TEST(ToolCallsDetectTest, TemplatesChooseTheirFormat) {
  EXPECT_EQ(DetectChatFormat("{{ '<tool_call>' }}").tools, F::kHermes);
  EXPECT_EQ(DetectChatFormat("<|start_header_id|>ipython<|end_header_id|>").tools, F::kLlama3);
  EXPECT_EQ(DetectChatFormat("[TOOL_CALLS]").tools, F::kMistral);
  EXPECT_EQ(DetectChatFormat("<|start_header_id|> <function=").tools, F::kFunctionaryV31);
  EXPECT_EQ(DetectChatFormat(">>>all").tools, F::kFunctionaryV32);
  EXPECT_EQ(DetectChatFormat("<|start_header_id|> functools[").tools, F::kFirefunction);
  EXPECT_EQ(DetectChatFormat("<|START_ACTION|>").tools, F::kCommandR7b);
  EXPECT_EQ(DetectChatFormat("<|im_start|>").tools, F::kGeneric);
  EXPECT_EQ(DetectChatFormat("<think>").think_close, "</think>");
  EXPECT_TRUE(DetectChatFormat("<|im_start|>").think_open.empty());
}

// The real templates of shared/models/chat-templates choose their format.
TEST(ToolCallsDetectTest, SharedTemplates) {
  const std::filesystem::path dir = std::filesystem::path(WEFT_SHARED_MODELS_DIR) / "chat-templates";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << dir << " is missing";
  const std::vector<std::pair<std::string, F>> expected = {
      {"CohereForAI-c4ai-command-r7b-12-2024-tool_use", F::kCommandR7b},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", F::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", F::kHermes},
      {"Qwen-Qwen2.5-7B-Instruct", F::kHermes},
      {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B", F::kDeepSeekR1},
      {"fireworks-ai-llama-3-firefunction-v2", F::kFirefunction},
      {"google-gemma-2-2b-it", F::kGeneric},
      {"meetkai-functionary-medium-v3.1", F::kFunctionaryV31},
      {"meetkai-functionary-medium-v3.2", F::kFunctionaryV32},
      {"meta-llama-Llama-3.1-8B-Instruct", F::kLlama3},
      {"meta-llama-Llama-3.2-3B-Instruct", F::kLlama3},
      {"meta-llama-Llama-3.3-70B-Instruct", F::kLlama3},
      {"microsoft-Phi-3.5-mini-instruct", F::kGeneric},
      {"mistralai-Mistral-Nemo-Instruct-2407", F::kMistral},
  };
  for (const auto& [name, format] : expected) {
    std::ifstream in(dir / (name + ".jinja"));
    ASSERT_TRUE(in.good()) << name;
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const ChatFormat f = DetectChatFormat(text);
    EXPECT_EQ(ToolCallFormatName(f.tools), ToolCallFormatName(format)) << name;
    EXPECT_EQ(f.think_open.empty(), format != F::kDeepSeekR1 && format != F::kCommandR7b) << name;
  }
}

TEST(ToolCallsDetectTest, IdsHaveTheFormatsShape) {
  const std::string id = NewToolCallId(F::kHermes);
  EXPECT_EQ(id.size(), 29u);
  EXPECT_TRUE(id.starts_with("call_"));
  EXPECT_EQ(NewToolCallId(F::kMistral).size(), 9u);
  EXPECT_NE(NewToolCallId(F::kHermes), NewToolCallId(F::kHermes));
}

TEST(ToolCallsDetectTest, ParseToolsOffIsContent) {
  ParserOptions o;
  o.format = F::kHermes;
  o.parse_tools = false;
  EXPECT_EQ(ParseToolCalls(o, "<tool_call>{}</tool_call>").content, "<tool_call>{}</tool_call>");
}

}  // namespace
}  // namespace weft::server
