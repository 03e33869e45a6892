// End-to-end tests of `weft run` (the real binary) on stories260K.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Stories() { return std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf"; }

// Runs `weft run ARGS`, capturing stdout and stderr.
Result RunWeft(const std::string& args) {
  const std::string err_path = ::testing::TempDir() + "/weft_run_stderr.txt";
  const std::string cmd =
      std::string(WEFT_BINARY) + " run " + args + " 2>'" + err_path + "'";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(err_path);
  std::stringstream ss;
  ss << f.rdbuf();
  r.err = ss.str();
  return r;
}

TEST(RunE2eTest, StoriesGreedyContinuation) {
  Result r = RunWeft("-m '" + Stories() + "' -p 'Once upon a time' -n 64 --temp 0");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Once upon a time, there was a little girl named Lily. "
                       "She loved to play outside in the park. One day, she saw a "
                       "big, red ball."),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("tokens/s"), std::string::npos) << r.err;
}

TEST(RunE2eTest, SameSeedSameTokens) {
  const std::string args = "-m '" + Stories() + "' -p 'Once upon a time' -n 48 --temp 0.8 --seed 42";
  Result a = RunWeft(args);
  Result b = RunWeft(args);
  ASSERT_EQ(a.rc, 0) << a.err;
  ASSERT_EQ(b.rc, 0) << b.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_GT(a.out.size(), std::string("Once upon a time").size());
  // Top-k 1 is greedy whatever the temperature.
  Result g = RunWeft("-m '" + Stories() + "' -p 'Once upon a time' -n 16 --temp 0");
  Result k1 = RunWeft("-m '" + Stories() + "' -p 'Once upon a time' -n 16 --temp 0.8 --top-k 1 --seed 3");
  EXPECT_EQ(g.out, k1.out);
}

TEST(RunE2eTest, Logprobs) {
  Result r = RunWeft("-m '" + Stories() + "' -p 'Once upon a time' -n 4 --temp 0 --logprobs 3");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("[1] "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("logprob"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rank 1"), std::string::npos) << r.err;
}

TEST(RunE2eTest, BadInputIsAClearError) {
  const std::string m = "-m '" + Stories() + "' ";
  Result r = RunWeft(m + "-p hi --temp -1");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("temperature"), std::string::npos) << r.err;
  r = RunWeft(m + "-p hi --top-p 0");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("top_p"), std::string::npos) << r.err;
  r = RunWeft(m + "-p 'Once upon a time there was a dog' --ctx 4");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("context"), std::string::npos) << r.err;
  r = RunWeft("-m /nonexistent.gguf -p hi");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("nonexistent"), std::string::npos) << r.err;
  r = RunWeft(m);
  EXPECT_EQ(r.rc, 2);
  r = RunWeft(m + "-p hi -n -3");
  EXPECT_EQ(r.rc, 2);
  // A vocabulary-only GGUF is not a model: the error names what is missing.
  r = RunWeft("-m '" + std::string(WEFT_SHARED_MODELS_DIR) + "/ggml-vocab-gpt-2.gguf' -p hi");
  EXPECT_EQ(r.rc, 2);
  EXPECT_FALSE(r.err.empty());
}

}  // namespace
