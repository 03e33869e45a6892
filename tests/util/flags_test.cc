#include "apps/flags.h"

#include <gtest/gtest.h>
#include <stdlib.h>

namespace weft::apps {
namespace {

int Parse(FlagSet& f, std::vector<const char*> args,
          std::vector<std::string>* pos) {
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  int rc = -1;
  if (!f.Parse(static_cast<int>(argv.size()), argv.data(), pos, &rc)) return rc;
  return -1;
}

TEST(FlagsTest, ParsesFormsAndPositionals) {
  FlagSet f("t", "test");
  std::string model;
  int64_t n = 16;
  double temp = 1.0;
  bool json = false;
  f.String("model", &model, "model", 'm');
  f.Int("n", &n, "count", 'n');
  f.Double("temp", &temp, "temperature");
  f.Bool("json", &json, "json");
  std::vector<std::string> pos;
  EXPECT_EQ(Parse(f, {"t", "-m", "a.gguf", "--n=3", "--temp", "0.5", "--json",
                      "x", "-1"},
                  &pos),
            -1);
  EXPECT_EQ(model, "a.gguf");
  EXPECT_EQ(n, 3);
  EXPECT_DOUBLE_EQ(temp, 0.5);
  EXPECT_TRUE(json);
  ASSERT_EQ(pos.size(), 2u);
  EXPECT_EQ(pos[1], "-1");
}

TEST(FlagsTest, BadValuesAndUnknownFlagsAreUsageErrors) {
  FlagSet f("t", "test");
  int64_t n = 0;
  f.Int("n", &n, "count");
  std::vector<std::string> pos;
  EXPECT_EQ(Parse(f, {"t", "--n", "abc"}, &pos), 2);
  EXPECT_EQ(Parse(f, {"t", "--bogus"}, &pos), 2);
  EXPECT_EQ(Parse(f, {"t", "--n"}, &pos), 2);
}

TEST(FlagsTest, EnvironmentFallback) {
  FlagSet f("t", "test");
  f.SetEnvPrefix("WEFTTEST");
  int64_t port = 8080;
  f.Int("max-seqs", &port, "p");
  setenv("WEFTTEST_MAX_SEQS", "9", 1);
  std::vector<std::string> pos;
  EXPECT_EQ(Parse(f, {"t"}, &pos), -1);
  EXPECT_EQ(port, 9);
  EXPECT_TRUE(f.WasSet("max-seqs"));
  unsetenv("WEFTTEST_MAX_SEQS");
}

}  // namespace
}  // namespace weft::apps
