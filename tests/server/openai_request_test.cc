#include "server/openai_request.h"

#include <gtest/gtest.h>

namespace weft::server {
namespace {

ParseLimits Limits() {
  ParseLimits l;
  l.max_n = 8;
  l.vocab_size = 1000;
  return l;
}

TEST(OpenAiRequestTest, CompletionAllFields) {
  auto r = ParseCompletionRequest(R"({
    "model": "m", "prompt": "hi", "max_tokens": 7, "temperature": 0.5,
    "top_p": 0.9, "top_k": 40, "min_p": 0.05, "n": 2, "stop": ["a", "b"],
    "seed": 42, "presence_penalty": 0.1, "frequency_penalty": -0.2,
    "repetition_penalty": 1.1, "logit_bias": {"5": -100, "7": 3.5},
    "logprobs": 3, "echo": false, "ignore_eos": true, "user": "u",
    "suffix": "", "best_of": 1, "response_format": {"type": "text"},
    "stream": true, "stream_options": {"include_usage": true},
    "stop_token_ids": [9], "unknown_field": {"x": 1}})",
                                  Limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const OpenAiRequest& q = r.value();
  EXPECT_FALSE(q.chat);
  EXPECT_EQ(q.model, "m");
  ASSERT_EQ(q.prompts.size(), 1u);
  EXPECT_EQ(*q.prompts[0].text, "hi");
  EXPECT_EQ(*q.max_tokens, 7);
  EXPECT_FLOAT_EQ(q.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(q.sampling.top_p, 0.9f);
  EXPECT_EQ(q.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(q.sampling.min_p, 0.05f);
  EXPECT_EQ(q.n, 2);
  EXPECT_EQ(q.stop, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(*q.sampling.seed, 42u);
  EXPECT_FLOAT_EQ(q.sampling.frequency_penalty, -0.2f);
  EXPECT_FLOAT_EQ(q.sampling.repetition_penalty, 1.1f);
  EXPECT_EQ(q.sampling.logit_bias.size(), 2u);
  EXPECT_FLOAT_EQ(q.sampling.logit_bias.at(5), -100.0f);
  EXPECT_EQ(q.sampling.logprobs, 3);
  EXPECT_FALSE(q.echo);
  EXPECT_TRUE(q.ignore_eos);
  EXPECT_TRUE(q.stream);
  EXPECT_TRUE(q.include_usage);
  EXPECT_EQ(q.stop_token_ids, std::vector<int32_t>{9});
}

// The speculative-decoding opt-out (an extension): unset, false, true.
TEST(OpenAiRequestTest, SpeculativeField) {
  auto unset = ParseCompletionRequest(R"({"prompt": "p"})", Limits());
  auto off = ParseCompletionRequest(R"({"prompt": "p", "speculative": false})",
                                    Limits());
  auto on = ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "u"}], "speculative": true})",
      Limits());
  ASSERT_TRUE(unset.ok() && off.ok() && on.ok());
  EXPECT_FALSE(unset.value().speculative.has_value());
  EXPECT_EQ(off.value().speculative, std::optional<bool>(false));
  EXPECT_EQ(on.value().speculative, std::optional<bool>(true));
}

TEST(OpenAiRequestTest, JsonObjectResponseFormatAsksForJsonMode) {
  for (const char* body :
       {R"({"prompt": "p", "response_format": {"type": "json_object"}})",
        R"({"messages": [{"role": "user", "content": "x"}],
            "response_format": {"type": "json_object"}})"}) {
    auto r = body[2] == 'p' ? ParseCompletionRequest(body, Limits())
                            : ParseChatRequest(body, Limits());
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_TRUE(r.value().sampling.json_object);
  }
  auto text = ParseCompletionRequest(
      R"({"prompt": "p", "response_format": {"type": "text"}})", Limits());
  ASSERT_TRUE(text.ok());
  EXPECT_FALSE(text.value().sampling.json_object);
}

TEST(OpenAiRequestTest, PromptShapes) {
  auto a = ParseCompletionRequest(R"({"prompt": ["x", "y"]})", Limits());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value().prompts.size(), 2u);
  auto b = ParseCompletionRequest(R"({"prompt": [1, 2, 3]})", Limits());
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b.value().prompts.size(), 1u);
  EXPECT_EQ(b.value().prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
  auto c = ParseCompletionRequest(R"({"prompt": [[1], [2, 3]]})", Limits());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c.value().prompts.size(), 2u);
  EXPECT_EQ(c.value().prompts[1].ids, (std::vector<int32_t>{2, 3}));
  // max_completion_tokens wins over max_tokens; nulls are ignored.
  auto d = ParseCompletionRequest(
      R"({"prompt": "p", "max_completion_tokens": 3, "max_tokens": 9,
          "temperature": null})",
      Limits());
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(*d.value().max_tokens, 3);
}

TEST(OpenAiRequestTest, ChatMessages) {
  auto r = ParseChatRequest(R"({
    "messages": [
      {"role": "system", "content": "be nice"},
      {"role": "user", "content": [{"type": "text", "text": "a"},
                                   {"type": "text", "text": "b"}]},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
      {"role": "tool", "content": "42", "tool_call_id": "call_1"}],
    "logprobs": true, "top_logprobs": 2,
    "tools": [{"type": "function", "function": {"name": "f"}}],
    "chat_template_kwargs": {"enable_thinking": false},
    "tool_choice": "auto", "response_format": {"type": "text"}})",
                            Limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& c = r.value().chat_request;
  ASSERT_EQ(c.messages.size(), 4u);
  EXPECT_EQ(*c.messages[1].content, "a\nb");
  EXPECT_FALSE(c.messages[2].content.has_value());
  ASSERT_EQ(c.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[2].tool_calls[0].name, "f");
  EXPECT_EQ(c.messages[2].tool_calls[0].arguments, "{\"x\":1}");
  EXPECT_EQ(*c.messages[3].tool_call_id, "call_1");
  EXPECT_EQ(c.tools_json, R"([{"type":"function","function":{"name":"f"}}])");
  EXPECT_EQ(c.kwargs_json.at("enable_thinking"), "false");
  EXPECT_EQ(r.value().sampling.logprobs, 2);
}

struct BadCase {
  bool chat;
  const char* body;
  const char* param;  // "" = no param
};

class BadRequestTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadRequestTest, RejectedWithParam) {
  const BadCase& c = GetParam();
  auto r = c.chat ? ParseChatRequest(c.body, Limits())
                  : ParseCompletionRequest(c.body, Limits());
  ASSERT_FALSE(r.ok()) << c.body;
  EXPECT_EQ(r.error().http_status, 400);
  EXPECT_EQ(r.error().type, "invalid_request_error");
  EXPECT_EQ(r.error().param.value_or(""), c.param) << r.error().message;
  EXPECT_FALSE(r.error().message.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Table, BadRequestTest,
    ::testing::Values(
        BadCase{false, "{", ""}, BadCase{false, "[1]", ""},
        BadCase{false, "", ""}, BadCase{false, R"({})", "prompt"},
        BadCase{false, R"({"prompt": 5})", "prompt"},
        BadCase{false, R"({"prompt": []})", "prompt"},
        BadCase{false, R"({"prompt": ["a", 1]})", "prompt"},
        BadCase{false, R"({"prompt": [1, "a"]})", "prompt"},
        BadCase{false, R"({"prompt": [1, 5000]})", "prompt"},
        BadCase{false, R"({"prompt": [-1]})", "prompt"},
        BadCase{false, R"({"prompt": [[]]})", "prompt"},
        BadCase{false, R"({"prompt": "p", "model": 3})", "model"},
        BadCase{false, R"({"prompt": "p", "speculative": "no"})",
                "speculative"},
        BadCase{false, R"({"prompt": "p", "max_tokens": 0})", "max_tokens"},
        BadCase{false, R"({"prompt": "p", "max_tokens": "9"})", "max_tokens"},
        BadCase{false, R"({"prompt": "p", "max_tokens": 1.5})", "max_tokens"},
        BadCase{false, R"({"prompt": "p", "max_completion_tokens": -2})",
                "max_completion_tokens"},
        BadCase{false, R"({"prompt": "p", "temperature": -0.1})",
                "temperature"},
        BadCase{false, R"({"prompt": "p", "temperature": 2.5})", "temperature"},
        BadCase{false, R"({"prompt": "p", "temperature": "hot"})",
                "temperature"},
        BadCase{false, R"({"prompt": "p", "top_p": 0})", "top_p"},
        BadCase{false, R"({"prompt": "p", "top_p": 1.01})", "top_p"},
        // Positive as a double, 0 as the float the sampler uses.
        BadCase{false, R"({"prompt": "p", "top_p": 1e-300})", "top_p"},
        BadCase{false, R"({"prompt": "p", "repetition_penalty": 1e-46})",
                "repetition_penalty"},
        // Accepted fields Weft cannot honour are refused, not ignored.
        BadCase{false,
                R"({"prompt": "p", "echo": true, "logprobs": 0,
                    "stream": true})",
                "echo"},
        BadCase{false, R"({"prompt": "p", "suffix": "end"})", "suffix"},
        BadCase{false, R"({"prompt": "p", "best_of": 3})", "best_of"},
        BadCase{false,
                R"({"prompt": "p", "response_format": {"type": "json_xml"}})",
                "response_format"},
        BadCase{false, R"({"prompt": "p", "response_format": "json"})",
                "response_format"},
        BadCase{false, R"({"prompt": "p", "top_k": -2})", "top_k"},
        BadCase{false, R"({"prompt": "p", "min_p": 1.5})", "min_p"},
        BadCase{false, R"({"prompt": "p", "n": 0})", "n"},
        BadCase{false, R"({"prompt": "p", "n": 9})", "n"},
        BadCase{false, R"({"prompt": "p", "stop": 3})", "stop"},
        BadCase{false, R"({"prompt": "p", "stop": [""]})", "stop"},
        BadCase{false, R"({"prompt": "p", "stop": ["a", 1]})", "stop"},
        BadCase{false, R"({"prompt": "p", "seed": "x"})", "seed"},
        BadCase{false, R"({"prompt": "p", "presence_penalty": 3})",
                "presence_penalty"},
        BadCase{false, R"({"prompt": "p", "frequency_penalty": -3})",
                "frequency_penalty"},
        BadCase{false, R"({"prompt": "p", "repetition_penalty": 0})",
                "repetition_penalty"},
        BadCase{false, R"({"prompt": "p", "logit_bias": []})", "logit_bias"},
        BadCase{false, R"({"prompt": "p", "logit_bias": {"x": 1}})",
                "logit_bias"},
        BadCase{false, R"({"prompt": "p", "logit_bias": {"5": 101}})",
                "logit_bias"},
        BadCase{false, R"({"prompt": "p", "logit_bias": {"99999": 1}})",
                "logit_bias"},
        BadCase{false, R"({"prompt": "p", "logprobs": 21})", "logprobs"},
        BadCase{false, R"({"prompt": "p", "logprobs": true})", "logprobs"},
        BadCase{false, R"({"prompt": "p", "echo": 1})", "echo"},
        BadCase{false, R"({"prompt": "p", "stream": "yes"})", "stream"},
        BadCase{false,
                R"({"prompt": "p", "stream_options": {"include_usage": true}})",
                "stream_options"},
        BadCase{false,
                R"({"prompt": "p", "stream": true, "stream_options": 1})",
                "stream_options"},
        BadCase{false, R"({"prompt": "p", "ignore_eos": "no"})", "ignore_eos"},
        BadCase{false, R"({"prompt": "p", "stop_token_ids": [-5]})",
                "stop_token_ids"},
        BadCase{true, R"({})", "messages"},
        BadCase{true, R"({"messages": []})", "messages"},
        BadCase{true, R"({"messages": "hi"})", "messages"},
        BadCase{true, R"({"messages": [1]})", "messages"},
        BadCase{true, R"({"messages": [{"content": "x"}]})", "messages"},
        BadCase{true, R"({"messages": [{"role": "wizard", "content": "x"}]})",
                "messages"},
        BadCase{true, R"({"messages": [{"role": "user", "content": 5}]})",
                "messages"},
        BadCase{true, R"({"messages": [{"role": "user"}]})", "messages"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content":
                    [{"type": "image_url", "image_url": {}}]}]})",
                "messages"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "top_logprobs": 2})",
                "top_logprobs"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "logprobs": true, "top_logprobs": 21})",
                "top_logprobs"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "logprobs": 3})",
                "logprobs"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": {}})",
                "tools"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "chat_template_kwargs": []})",
                "chat_template_kwargs"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "response_format": {"type": "json_schema",
                                        "json_schema": {"name": "x"}}})",
                "response_format.json_schema.schema"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tool_choice": "required"})",
                "tool_choice"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tool_choice": {"type": "function",
                                    "function": {"name": "f"}}})",
                "tool_choice"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "function", "function": {"name": "g"}}],
                    "tool_choice": {"type": "function", "function": {"name": "f"}}})",
                "tool_choice"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "function", "function": {"name": "g"}}],
                    "tool_choice": "sometimes"})",
                "tool_choice"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "function", "function": {"name": "g"}}],
                    "tool_choice": "required",
                    "response_format": {"type": "json_object"}})",
                "tool_choice"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "function", "function": {}}]})",
                "tools[0].function.name"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "tools": [{"type": "function", "function": {"name": "g",
                               "parameters": [1]}}]})",
                "tools[0].function.parameters"},
        BadCase{true,
                R"({"messages": [{"role": "user", "content": "x"}],
                    "parallel_tool_calls": "yes"})",
                "parallel_tool_calls"}));

TEST(OpenAiRequestTest, ToolFields) {
  auto r = ParseChatRequest(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "a",
                 "parameters": {"type": "object", "properties": {"z": {}, "b": {}}}}},
                {"type": "function", "function": {"name": "b"}}],
      "tool_choice": {"type": "function", "function": {"name": "b"}},
      "parallel_tool_calls": false})",
                            Limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const ToolRequest& t = r.value().tools;
  ASSERT_EQ(t.tools.size(), 2u);
  EXPECT_EQ(t.tools[0].parameters, R"({"type":"object","properties":{"z":{},"b":{}}})");
  EXPECT_EQ(t.tools[1].parameters, "");
  EXPECT_EQ(t.choice, ToolChoice::kNamed);
  EXPECT_EQ(t.named, "b");
  EXPECT_FALSE(t.parallel);
  EXPECT_TRUE(t.forced());
  // Keys as written, for the template too.
  EXPECT_NE(r.value().chat_request.tools_json.find(R"("z":{},"b":{})"), std::string::npos);

  auto none = ParseChatRequest(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "a"}}], "tool_choice": "none"})",
                               Limits());
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none.value().tools.active());
  EXPECT_TRUE(none.value().chat_request.tools_json.empty());

  auto def = ParseChatRequest(R"({"messages": [{"role": "user", "content": "x"}],
      "tools": [{"type": "function", "function": {"name": "a"}}]})",
                              Limits());
  ASSERT_TRUE(def.ok());
  EXPECT_EQ(def.value().tools.choice, ToolChoice::kAuto);
}

TEST(OpenAiRequestTest, TokenizeShapes) {
  auto a = ParseTokenizeRequest(R"({"prompt": "hi", "add_special": false})");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a.value().text, "hi");
  EXPECT_FALSE(a.value().add_special);
  auto b = ParseTokenizeRequest(R"({"content": "yo"})");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b.value().text, "yo");
  EXPECT_TRUE(b.value().add_special);
  auto c = ParseTokenizeRequest(
      R"({"messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(c.value().chat.has_value());
  EXPECT_FALSE(ParseTokenizeRequest(R"({})").ok());
  EXPECT_EQ(ParseTokenizeRequest(R"({"prompt": 1})").error().param.value_or(""),
            "prompt");
  ParseLimits l = Limits();
  EXPECT_EQ(ParseDetokenizeRequest(R"({"tokens": [1, 2]})", l).value(),
            (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(ParseDetokenizeRequest(R"({"tokens": "x"})", l)
                .error()
                .param.value_or(""),
            "tokens");
  EXPECT_FALSE(ParseDetokenizeRequest(R"({"tokens": [1000]})", l).ok());
}

}  // namespace
}  // namespace weft::server
