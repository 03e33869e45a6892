// Structured-output request fields (openai_constraints.h) through the
// endpoint parsers: every form compiles to one grammar, two forms or a
// constraint the engine cannot enforce are a 400 naming the field.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "server/openai_constraints.h"
#include "server/openai_request.h"

namespace weft::server {
namespace {

using sampling::ConstraintKind;

ParseLimits Limits() {
  ParseLimits l;
  l.vocab_size = 1000;
  return l;
}

// Parses `fields` (a JSON object's members) as a completion and as a chat body.
std::vector<ApiResult<OpenAiRequest>> ParseBoth(const std::string& fields) {
  std::vector<ApiResult<OpenAiRequest>> out;
  out.push_back(ParseCompletionRequest(R"({"prompt": "p", )" + fields + "}", Limits()));
  out.push_back(ParseChatRequest(
      R"({"messages": [{"role": "user", "content": "x"}], )" + fields + "}", Limits()));
  return out;
}

struct FormCase {
  std::string fields;
  ConstraintKind kind;
  std::string accepted;  // a sentence of the constraint
  std::string rejected;  // not one
};

class ConstraintFormTest : public ::testing::TestWithParam<FormCase> {};

TEST_P(ConstraintFormTest, CompilesToOneGrammar) {
  const FormCase& c = GetParam();
  for (const ApiResult<OpenAiRequest>& r : ParseBoth(c.fields)) {
    ASSERT_TRUE(r.ok()) << c.fields << ": " << r.error().message;
    const sampling::StructuredOutput& s = r.value().sampling.structured;
    ASSERT_NE(s.grammar, nullptr) << c.fields;
    EXPECT_EQ(s.kind, c.kind) << c.fields;
    EXPECT_FALSE(r.value().sampling.json_object);
    EXPECT_TRUE(s.grammar->Matches(c.accepted)) << c.fields;
    EXPECT_FALSE(s.grammar->Matches(c.rejected)) << c.fields;
  }
}

const char kSchema[] =
    R"({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
        "additionalProperties": false})";

INSTANTIATE_TEST_SUITE_P(
    Forms, ConstraintFormTest,
    ::testing::Values(
        FormCase{std::string(R"("response_format": {"type": "json_schema", "json_schema":
                 {"name": "x", "strict": true, "schema": )") + kSchema + "}}",
                 ConstraintKind::kJsonSchema, R"({"n": 1})", R"({"m": 1})"},
        FormCase{std::string(R"("structured_outputs": {"json": )") + kSchema + "}",
                 ConstraintKind::kJsonSchema, R"({"n": 1})", R"({"n": "1"})"},
        FormCase{R"("structured_outputs": {"json": "{\"type\": \"boolean\"}"})",
                 ConstraintKind::kJsonSchema, "true", "1"},
        FormCase{R"("structured_outputs": {"regex": "[ab]{2}\\d"})", ConstraintKind::kRegex,
                 "ab7", "abc"},
        FormCase{R"("structured_outputs": {"choice": ["yes", "no"]})", ConstraintKind::kChoice,
                 "no", "maybe"},
        FormCase{R"("structured_outputs": {"grammar": "root ::= \"a\" [0-9]+"})",
                 ConstraintKind::kGbnf, "a12", "b1"},
        FormCase{std::string(R"("guided_json": )") + kSchema, ConstraintKind::kJsonSchema,
                 R"({"n": -3})", "{}"},
        FormCase{R"("guided_regex": "x+")", ConstraintKind::kRegex, "xx", "y"},
        FormCase{R"("guided_choice": ["a b", "c"])", ConstraintKind::kChoice, "a b", "a"},
        FormCase{R"("guided_grammar": "root ::= \"z\"+")", ConstraintKind::kGbnf, "zz", ""},
        FormCase{std::string(R"("json_schema": )") + kSchema, ConstraintKind::kJsonSchema,
                 R"({"n": 0})", "[]"},
        FormCase{R"("grammar": "root ::= \"x\" | \"y\"")", ConstraintKind::kGbnf, "y", "xy"},
        FormCase{R"("structured_outputs": {"regex": null, "choice": ["q"]})",
                 ConstraintKind::kChoice, "q", "r"}));

struct BadCase {
  std::string fields;
  std::string param;    // the error's param
  std::string message;  // a part of its message
};

class ConstraintErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ConstraintErrorTest, Is400NamingTheField) {
  const BadCase& c = GetParam();
  for (const ApiResult<OpenAiRequest>& r : ParseBoth(c.fields)) {
    ASSERT_FALSE(r.ok()) << c.fields;
    const ApiError& e = r.error();
    EXPECT_EQ(e.http_status, 400);
    EXPECT_EQ(e.type, "invalid_request_error");
    EXPECT_EQ(e.param.value_or(""), c.param) << e.message;
    EXPECT_NE(e.message.find(c.message), std::string::npos) << e.message;
    const nlohmann::json body = nlohmann::json::parse(e.ToJson());
    EXPECT_EQ(body["error"]["param"], c.param);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Errors, ConstraintErrorTest,
    ::testing::Values(
        // Two constraints.
        BadCase{R"("guided_regex": "a", "grammar": "root ::= \"a\"")", "grammar",
                "at most one structured-output constraint"},
        BadCase{R"("response_format": {"type": "json_object"}, "guided_choice": ["a"])",
                "guided_choice", "'response_format.json_object' and 'guided_choice'"},
        BadCase{R"("structured_outputs": {"regex": "a", "choice": ["a"]})",
                "structured_outputs.choice", "'structured_outputs.regex' and"},
        // Malformed fields.
        BadCase{R"("response_format": {"type": "json_schema"})", "response_format.json_schema",
                "needs a 'json_schema' object"},
        BadCase{R"("response_format": {"type": "json_schema", "json_schema": {"name": 3,
                 "schema": {}}})", "response_format.json_schema.name", "must be a string"},
        BadCase{R"("structured_outputs": [])", "structured_outputs", "must be an object"},
        BadCase{R"("structured_outputs": {"xml": "a"})", "structured_outputs.xml",
                "not supported"},
        BadCase{R"("guided_choice": [])", "guided_choice", "non-empty list of strings"},
        BadCase{R"("guided_choice": ["a", 1])", "guided_choice", "non-empty list of strings"},
        BadCase{R"("guided_regex": "")", "guided_regex", "non-empty string"},
        BadCase{R"("json_schema": 7)", "json_schema", "must be a JSON Schema"},
        // Constraints the engine cannot enforce: fail closed, naming them.
        BadCase{R"("response_format": {"type": "json_schema", "json_schema": {"name": "x",
                 "schema": {"type": "string", "contentEncoding": "base64"}}})",
                "response_format.json_schema.schema", "contentEncoding"},
        BadCase{R"("guided_json": "{not json")", "guided_json", "cannot be enforced"},
        BadCase{R"("guided_regex": "(a)\\1")", "guided_regex", "cannot be enforced"},
        BadCase{R"("grammar": "root ::= undefined_rule")", "grammar", "cannot be enforced"}));

TEST(ConstraintFormsTest, PropertiesKeepTheOrderWritten) {
  auto r = ParseCompletionRequest(R"({"prompt": "p", "json_schema": {"type": "object",
      "properties": {"zeta": {"type": "integer"}, "alpha": {"type": "integer"}},
      "required": ["zeta", "alpha"], "additionalProperties": false}})",
                                  Limits());
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto& g = r.value().sampling.structured.grammar;
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(g->Matches(R"({"zeta": 1, "alpha": 2})"));
  EXPECT_FALSE(g->Matches(R"({"alpha": 2, "zeta": 1})"));
}

TEST(ConstraintFormsTest, ListsEveryForm) {
  const std::vector<std::string> forms = StructuredOutputForms();
  for (const char* f : {"response_format.json_schema", "structured_outputs.regex", "guided_choice",
                        "json_schema", "grammar"}) {
    EXPECT_NE(std::find(forms.begin(), forms.end(), f), forms.end()) << f;
  }
}

}  // namespace
}  // namespace weft::server
