// `weft tokenize` end to end: runs the real binary.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct Result {
  int exit_code;
  std::string out;
};

// Runs `weft ARGS` through the shell, capturing stdout.
Result RunWeft(const std::string& args) {
  const std::string cmd = std::string(WEFT_BINARY) + " " + args + " 2>/dev/null";
  Result r{-1, ""};
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Vocab(const char* name) {
  const std::string path = std::string(WEFT_SHARED_MODELS_DIR) + "/" + name;
  return std::ifstream(path).good() ? path : "";
}

TEST(TokenizeCliTest, EncodesAndDecodes) {
  const std::string spm = Vocab("ggml-vocab-llama-spm.gguf");
  if (spm.empty()) GTEST_SKIP();
  Result r = RunWeft("tokenize " + spm + " 'Hello world' --ids-only");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "1 15043 3186\n");
  r = RunWeft("tokenize " + spm + " 'Hello world' --ids-only --no-bos");
  EXPECT_EQ(r.out, "15043 3186\n");
  r = RunWeft("tokenize " + spm + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("15043 -> ' Hello'"), std::string::npos) << r.out;
  r = RunWeft("tokenize " + spm + " --detokenize '15043,3186'");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "Hello world\n");
  r = RunWeft("tokenize " + spm + " --detokenize '1 15043 3186' --special");
  EXPECT_EQ(r.out, "<s> Hello world\n");
  r = RunWeft("tokenize " + spm + " '<s>x' --ids-only --no-bos --special");
  EXPECT_EQ(r.out.substr(0, 2), "1 ") << r.out;
}

TEST(TokenizeCliTest, BadInputExitsTwo) {
  const std::string spm = Vocab("ggml-vocab-llama-spm.gguf");
  if (spm.empty()) GTEST_SKIP();
  EXPECT_EQ(RunWeft("tokenize " + spm + " --detokenize 'x,1'").exit_code, 2);
  EXPECT_EQ(RunWeft("tokenize " + spm + " --detokenize '99999999'").exit_code, 2);
  EXPECT_EQ(RunWeft("tokenize " + spm).exit_code, 2);
  EXPECT_EQ(RunWeft("tokenize /nonexistent.gguf hi").exit_code, 2);  // as run
}

}  // namespace
