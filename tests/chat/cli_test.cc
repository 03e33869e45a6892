// `weft template` end to end: the binary renders chats and reports bad input
// with exit code 2.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct Result {
  int code = -1;
  std::string out;
};

Result RunWeft(const std::string& args) {
  Result r;
  std::string cmd =
      std::string(WEFT_BINARY) + " template " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/weft_cli_" + name;
  std::ofstream(path) << text;
  return path;
}

const char kChat[] =
    R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi ü"}])";

TEST(TemplateCli, RendersWithTemplateFile) {
  std::string msgs = WriteTemp("msgs.json", kChat);
  std::string tmpl = WriteTemp(
      "t.jinja",
      "{{ bos_token }}{% for m in messages %}[{{ m.role }}:{{ m.content }}]"
      "{% endfor %}{% if add_generation_prompt %}>{% endif %}");
  Result r = RunWeft("--chat-template " + tmpl + " --messages " + msgs +
                     " --bos '<s>' --add-generation-prompt");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "<s>[system:Be brief.][user:Hi ü]>");
}

TEST(TemplateCli, RealTemplateAndRequestObject) {
  std::string req = WriteTemp(
      "req.json",
      std::string(R"({"messages": )") + kChat +
          R"(, "tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {}}}]})");
  Result r =
      RunWeft("--chat-template " WEFT_SHARED_MODELS_DIR
              "/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja --messages " +
              req);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(
      r.out.find(
          "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"f\""),
      std::string::npos)
      << r.out;
}

// Gemma 3 270M (a base model) has no template: its vocabulary's turn
// tokens pick the built-in Gemma template, the system text folded into the
// first user turn.
TEST(TemplateCli, GemmaWithoutTemplateGetsGemmaTurns) {
  std::ifstream model(WEFT_GEMMA_MODEL);
  if (!model.good()) GTEST_SKIP() << "no Gemma model";
  std::string msgs = WriteTemp("msgs2.json", kChat);
  Result r = RunWeft(std::string(WEFT_GEMMA_MODEL) + " --messages " + msgs +
                     " --add-generation-prompt");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out,
            "<start_of_turn>user\nBe brief.\n\nHi ü<end_of_turn>\n"
            "<start_of_turn>model\n");
}

// stories260K's 512-token vocabulary has no turn tokens: the plain
// transcript, with no marker at all.
TEST(TemplateCli, VocabWithoutTurnTokensGetsPlainTranscript) {
  std::string msgs = WriteTemp("msgs4.json", kChat);
  Result r = RunWeft(std::string(WEFT_SHARED_MODELS_DIR) +
                     "/stories260K.gguf --messages " + msgs +
                     " --add-generation-prompt");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, "Be brief.\n\nUser: Hi ü\nAssistant:");
}

TEST(TemplateCli, BuiltinByName) {
  std::string msgs = WriteTemp("msgs5.json", kChat);
  Result r = RunWeft("--builtin chatml --messages " + msgs +
                     " --add-generation-prompt");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out,
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi ü"
            "<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(RunWeft("--builtin vicuna --messages " + msgs).code, 2);
}

TEST(TemplateCli, BadInputExitsWithTwo) {
  std::string msgs = WriteTemp("msgs3.json", kChat);
  std::string bad_json = WriteTemp("bad.json", "[{\"role\": ");
  std::string bad_tmpl = WriteTemp("bad.jinja", "{% if %}");
  EXPECT_EQ(RunWeft("--chat-template " + bad_tmpl + " --messages " + msgs).code,
            2);
  std::string ok_tmpl = WriteTemp("ok.jinja", "x");
  EXPECT_EQ(
      RunWeft("--chat-template " + ok_tmpl + " --messages " + bad_json).code,
      2);
  EXPECT_EQ(RunWeft("--chat-template " + ok_tmpl).code, 2);  // no --messages
  EXPECT_EQ(RunWeft("/nonexistent.gguf --messages " + msgs).code, 2);
  // The template rejects the chat (gemma-2 has no system role).
  EXPECT_EQ(RunWeft("--chat-template " WEFT_SHARED_MODELS_DIR
                    "/chat-templates/google-gemma-2-2b-it.jinja --messages " +
                    msgs)
                .code,
            2);
}

}  // namespace
