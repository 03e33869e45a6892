// Renders every real chat template in tests/data/chat/template_goldens.json
// (made by tools/make_template_goldens.py with Python jinja2 set up like
// Hugging Face transformers) and compares byte for byte.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "chat/builtin_templates.h"
#include "chat/template.h"
#include "tests/chat/json_value.h"

namespace weft::chat {
namespace {

using Json = nlohmann::ordered_json;

Json LoadGoldens() {
  std::ifstream f(std::string(WEFT_SOURCE_DIR) +
                  "/tests/data/chat/template_goldens.json");
  EXPECT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  return Json::parse(ss.str());
}

// strftime_now fixed to the goldens' date (2024-07-26 12:00:00).
std::string FixedStrftime(const std::string& fmt) {
  std::tm tm{};
  tm.tm_year = 2024 - 1900;
  tm.tm_mon = 6;
  tm.tm_mday = 26;
  tm.tm_hour = 12;
  tm.tm_wday = 5;
  tm.tm_yday = 207;
  char buf[256];
  size_t n = std::strftime(buf, sizeof(buf), fmt.c_str(), &tm);
  return std::string(buf, n);
}

std::string FirstDiff(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  size_t from = i > 60 ? i - 60 : 0;
  return "first difference at byte " + std::to_string(i) + "\n  want: ..." +
         want.substr(from, 160) + "\n  got:  ..." + got.substr(from, 160);
}

// The built-in templates' sources are the ones the golden script rendered
// with jinja2 (it keeps a copy of each under "builtin:NAME").
TEST(TemplateGolden, BuiltinSourcesMatchGoldenScript) {
  Json g = LoadGoldens();
  for (BuiltinTemplate t : {BuiltinTemplate::kGemma, BuiltinTemplate::kLlama3,
                            BuiltinTemplate::kChatMl, BuiltinTemplate::kPlain}) {
    const std::string key = "builtin:" + std::string(BuiltinTemplateName(t));
    ASSERT_TRUE(g["templates"].contains(key)) << key;
    EXPECT_EQ(g["templates"][key].get<std::string>(), BuiltinTemplateSource(t))
        << key;
  }
}

TEST(TemplateGolden, RendersLikeJinja2) {
  Json g = LoadGoldens();
  std::map<std::string, Template> templates;
  for (const auto& [name, src] : g["templates"].items()) {
    auto t = Template::Parse(src.get<std::string>());
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    templates.emplace(name, std::move(t).value());
  }
  RenderConfig config;
  config.strftime_now = FixedStrftime;
  const std::string bos = g["bos_token"], eos = g["eos_token"];
  int checked = 0, failed = 0;
  for (const Json& r : g["results"]) {
    const std::string tname = r["template"], cname = r["case"];
    const bool agp = r["add_generation_prompt"];
    const Json& c = g["cases"][cname];
    Value tools = c.contains("tools") ? testing::FromJson(c["tools"]) : Value();
    Value extra = c.contains("extra") ? testing::FromJson(c["extra"]) : Value();
    auto out = RenderChat(templates.at(tname), testing::FromJson(c["messages"]),
                          bos, eos, agp, tools, extra, config);
    std::string what = tname + " / " + cname + (agp ? " / gen" : "");
    ++checked;
    bool ok = true;
    if (r.contains("output")) {
      const std::string want = r["output"];
      if (!out.ok()) {
        ADD_FAILURE() << what << ": " << out.status().ToString();
        ok = false;
      } else if (*out != want) {
        ADD_FAILURE() << what << ": " << FirstDiff(want, *out);
        ok = false;
      }
    } else if (r["kind"] == "raise") {
      if (out.ok() || !IsRaisedException(out.status()) ||
          out.status().message() != r["message"].get<std::string>()) {
        ADD_FAILURE() << what << ": want raise_exception(" << r["message"]
                      << "), got "
                      << (out.ok() ? "output" : out.status().ToString());
        ok = false;
      }
    } else {
      if (out.ok() || IsRaisedException(out.status())) {
        ADD_FAILURE() << what << ": want an error like " << r["message"]
                      << ", got "
                      << (out.ok() ? "output" : out.status().ToString());
        ok = false;
      }
    }
    failed += !ok;
  }
  EXPECT_GT(checked, 500);
  EXPECT_EQ(failed, 0) << failed << " of " << checked << " renders differ";
}

// Small templates covering each feature (filters, tests, loops, macros,
// whitespace control, errors), rendered with the goldens' feature_context.
TEST(TemplateGolden, FeaturesLikeJinja2) {
  Json g = LoadGoldens();
  Value ctx = testing::FromJson(g["feature_context"]);
  RenderConfig config;
  config.strftime_now = FixedStrftime;
  int checked = 0;
  for (const Json& r : g["features"]) {
    const std::string src = r["source"];
    ++checked;
    auto t = Template::Parse(src);
    std::string kind = r.contains("kind") ? r["kind"].get<std::string>() : "";
    if (kind == "syntax") {
      EXPECT_FALSE(t.ok()) << src << ": want syntax error " << r["message"];
      if (!t.ok()) {
        EXPECT_NE(t.status().message().find("line"), std::string::npos)
            << t.status().ToString();
      }
      continue;
    }
    if (kind == "error" && !t.ok()) continue;  // e.g. break outside a loop
    ASSERT_TRUE(t.ok()) << src << ": " << t.status().ToString();
    auto out = t->Render(ctx, config);
    if (kind.empty()) {
      ASSERT_TRUE(out.ok()) << src << ": " << out.status().ToString();
      EXPECT_EQ(*out, r["output"].get<std::string>()) << src;
    } else if (kind == "raise") {
      ASSERT_FALSE(out.ok()) << src;
      EXPECT_TRUE(IsRaisedException(out.status())) << out.status().ToString();
      EXPECT_EQ(out.status().message(), r["message"].get<std::string>());
    } else {
      EXPECT_FALSE(out.ok()) << src << ": want error " << r["message"]
                             << ", got " << (out.ok() ? *out : "");
      if (!out.ok()) {
        EXPECT_FALSE(IsRaisedException(out.status()));
      }
    }
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace weft::chat
