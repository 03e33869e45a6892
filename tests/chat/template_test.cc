// Unit tests of the chat-template API: errors, limits, ChatML fallback,
// RenderChat's context, and robustness on hostile input.
#include "chat/template.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "chat/builtin_templates.h"

namespace weft::chat {
namespace {

StatusOr<std::string> RenderSrc(std::string_view src,
                                const Value& ctx = Value(),
                                const RenderConfig& config = {}) {
  ASSIGN_OR_RETURN(Template t, Template::Parse(src));
  return t.Render(ctx.is_undefined() ? Value::MakeDict() : ctx, config);
}

Value Msg(const char* role, const char* content) {
  return DictOf({{"role", Value(role)}, {"content", Value(content)}});
}

TEST(Template, RendersVariablesAndLoops) {
  Value ctx = DictOf({{"name", Value("Weft")},
                      {"xs", ListOf({Value(1), Value(2), Value(3)})}});
  auto out =
      RenderSrc("Hi {{ name }}:{% for x in xs %} {{ x * 2 }}{% endfor %}", ctx);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "Hi Weft: 2 4 6");
}

// Expected strings rendered by Python jinja2 3.1 from the same source.
TEST(Template, StringMethodsTakeStartAndEnd) {
  auto out = RenderSrc(
      R"({{ "abcabc".find("c", 3) }} {{ "abcabc".index("a", 1) }} )"
      R"({{ "aXbX".count("X", 2) }} {{ "abc".startswith("b", 1) }} )"
      R"({{ "abc.py".endswith("abc", 0, 3) }} {{ "abc".find("", 5) }} )"
      R"({{ "abc".find("", 3) }} {{ "h\u00e9llo".find("l", -2) }} )"
      R"({{ "abc".rfind("b", 0, 1) }} {{ "abcabc".count("", 1, 3) }} )"
      R"({{ "abc".startswith("", 4) }})");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "5 3 1 True True -1 3 3 -1 3 False");
  EXPECT_FALSE(RenderSrc(R"({{ "abc".find("b", "1") }})").ok());
}

TEST(Template, TitleCaseKeepsNonAsciiLettersInTheirWord) {
  // voil\u00e0bon \u00c5ke, h\u00e9llo w\u00f6rld, a\u00e9b, \u65e5\u672cabc
  auto out = RenderSrc(
      "{{ \"voil\xc3\xa0" "bon \xc3\x85ke\"|title }}|"
      "{{ \"h\xc3\xa9llo w\xc3\xb6rld\".title() }}|"
      "{{ \"a\xc3\xa9" "b\".title() }}|"
      "{{ \"\xe6\x97\xa5\xe6\x9c\xac" "abc\".title() }}|"
      "{{ \"\xc2\xa0\".isspace() }}");
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "Voil\xc3\xa0" "bon \xc3\x85ke|H\xc3\xa9llo W\xc3\xb6rld|"
            "A\xc3\xa9" "b|\xe6\x97\xa5\xe6\x9c\xac" "Abc|True");
}

TEST(Template, ParseErrorNamesTheLine) {
  auto t = Template::Parse("line one\n{% if true %}\n{{ 1 + }}\n{% endif %}");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("line 3"), std::string::npos)
      << t.status().message();

  auto u = Template::Parse("a\nb\n{% frobnicate %}");
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("line 3"), std::string::npos);
  EXPECT_NE(u.status().message().find("frobnicate"), std::string::npos);

  auto v = Template::Parse("{% for x in y %}\n\nno end");
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("endfor"), std::string::npos);
}

TEST(Template, RaiseExceptionIsDistinct) {
  auto out = RenderSrc("ok{{ raise_exception('Roles must alternate') }}");
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(IsRaisedException(out.status()));
  EXPECT_EQ(out.status().message(), "Roles must alternate");

  auto other = RenderSrc("{{ missing.attr }}");
  ASSERT_FALSE(other.ok());
  EXPECT_FALSE(IsRaisedException(other.status()));
  EXPECT_NE(other.status().message().find("line 1"), std::string::npos);
  EXPECT_NE(other.status().message().find("'missing' is undefined"),
            std::string::npos)
      << other.status().message();
}

TEST(Template, RuntimeErrorNamesTheLine) {
  auto out = RenderSrc("a\nb\n{{ 'x' + 1 }}");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("line 3"), std::string::npos)
      << out.status().message();
}

TEST(Template, InfiniteMacroRecursionIsBounded) {
  auto out =
      RenderSrc("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted)
      << out.status().ToString();
}

TEST(Template, HugeLoopsAreBounded) {
  RenderConfig config;
  config.max_loop_iterations = 10000;
  auto out = RenderSrc(
      "{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}"
      "{% endfor %}",
      Value(), config);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(Template, OutputSizeIsBounded) {
  RenderConfig config;
  config.max_output_bytes = 1 << 20;
  auto doubling = RenderSrc(
      "{% set ns = namespace(s='x') %}{% for i in range(40) %}"
      "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
      Value(), config);
  ASSERT_FALSE(doubling.ok());
  EXPECT_EQ(doubling.status().code(), StatusCode::kResourceExhausted);

  auto repeat = RenderSrc("{{ 'x' * 100000000000 }}", Value(), config);
  ASSERT_FALSE(repeat.ok());
  EXPECT_EQ(repeat.status().code(), StatusCode::kResourceExhausted);

  auto text =
      RenderSrc("{% for i in range(100000) %}0123456789abcdef{% endfor %}",
                Value(), config);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
}

TEST(Template, DeepNestingIsAnErrorNotACrash) {
  std::string parens =
      "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  EXPECT_FALSE(Template::Parse(parens).ok());
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_FALSE(Template::Parse(nots + "x }}").ok());
  std::string sum = "{{ 1";
  for (int i = 0; i < 100000; ++i) sum += " + 1";
  EXPECT_FALSE(Template::Parse(sum + " }}").ok());
  std::string ifs;
  for (int i = 0; i < 3000; ++i) ifs += "{% if true %}";
  for (int i = 0; i < 3000; ++i) ifs += "{% endif %}";
  EXPECT_FALSE(Template::Parse(ifs).ok());
  std::string elifs = "{% if false %}";
  for (int i = 0; i < 3000; ++i) elifs += "{% elif false %}";
  EXPECT_FALSE(Template::Parse(elifs + "{% endif %}").ok());
  // Values nested by a loop.
  auto nested = RenderSrc(
      "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}"
      "{% set ns.v = [ns.v] %}{% endfor %}{{ ns.v }}");
  ASSERT_FALSE(nested.ok());
  auto nested_list = RenderSrc(
      "{% set ns = namespace(v=[]) %}{% for i in range(5000) %}"
      "{% set ns.v = [ns.v, 'x'] %}{% endfor %}{{ ns.v }}");
  ASSERT_FALSE(nested_list.ok());
  // A namespace inside itself would be a reference cycle.
  EXPECT_FALSE(
      RenderSrc("{% set ns = namespace() %}{% set ns.me = [ns] %}").ok());
}

TEST(Template, ModerateNestingWorks) {
  std::string src;
  for (int i = 0; i < 20; ++i) src += "{% for x in [1] %}{% if true %}";
  src += "deep";
  for (int i = 0; i < 20; ++i) src += "{% endif %}{% endfor %}";
  auto out = RenderSrc(src);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, "deep");
}

TEST(Template, RandomInputNeverCrashes) {
  const std::string alphabet =
      "{}%#-+()[]<>=!|~.,:'\"\\ \nabcxyz0129_ifsetforendmacro";
  std::mt19937 rng(1234);
  Value ctx =
      DictOf({{"x", Value(1)}, {"messages", ListOf({Msg("user", "hi")})}});
  int parsed = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string src;
    int len = static_cast<int>(rng() % 60);
    for (int i = 0; i < len; ++i) src += alphabet[rng() % alphabet.size()];
    if (iter % 3 == 0) src = "{{ " + src + " }}";
    if (iter % 3 == 1) src = "{% " + src + " %}";
    auto t = Template::Parse(src);
    if (!t.ok()) continue;
    ++parsed;
    (void)t->Render(ctx);
  }
  EXPECT_GT(parsed, 0);
}

TEST(Template, ChatMlFallback) {
  auto t = Template::Parse(BuiltinTemplateSource(BuiltinTemplate::kChatMl));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Value messages = ListOf({Msg("system", "Be brief."), Msg("user", "Hi"),
                           Msg("assistant", "Hello!"), Msg("user", "Bye")});
  auto out = RenderChat(*t, messages, "<s>", "</s>", true);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out,
            "<|im_start|>system\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nHi<|im_end|>\n"
            "<|im_start|>assistant\nHello!<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
  auto no_gen = RenderChat(*t, ListOf({Msg("user", "Hi")}), "", "", false);
  ASSERT_TRUE(no_gen.ok());
  EXPECT_EQ(*no_gen, "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(Template, RenderChatContext) {
  auto t = Template::Parse(
      "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|"
      "{{ tools is none }}|{{ documents is none }}|{{ messages|length }}|"
      "{{ custom }}|{{ tools|length if tools else '' }}");
  ASSERT_TRUE(t.ok());
  auto a = RenderChat(*t, ListOf({Msg("user", "x")}), "<bos>", "<eos>", true,
                      Value(), DictOf({{"custom", Value("kw")}}));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(*a, "<bos>|<eos>|True|True|True|1|kw|");
  auto b = RenderChat(*t, ListOf({}), "", "", false, ListOf({DictOf({})}));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, "||False|False|True|0||1");
}

TEST(Template, StrftimeNowIsInjectable) {
  RenderConfig config;
  config.strftime_now = [](const std::string& fmt) { return "<" + fmt + ">"; };
  auto out = RenderSrc("{{ strftime_now('%d %b %Y') }}", Value(), config);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, "<%d %b %Y>");
  auto real = RenderSrc("{{ strftime_now('%Y')|length }}");
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(*real, "4");
}

TEST(Template, TemplateIsReusableAndCopyable) {
  auto t = Template::Parse("{% set x = n * 2 %}{{ x }}");
  ASSERT_TRUE(t.ok());
  Template copy = *t;
  for (int i = 0; i < 3; ++i) {
    auto out = copy.Render(DictOf({{"n", Value(i)}}));
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(*out, std::to_string(i * 2));
  }
}

}  // namespace
}  // namespace weft::chat
