// Goldens from independent implementations (tools/make_tokenizer_goldens.py):
//  * sentencepiece with llama2-tokenizer.model vs our llama tokenizer on
//    ggml-vocab-llama-spm.gguf (same Llama 2 vocabulary);
//  * llama-cpp-python on the default Gemma 3 model and stories260K.
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/unicode.h"

namespace weft::tokenizer {
namespace {

using testing::FileExists;
using testing::FromHex;
using testing::LoadTokenizer;
using testing::ReadFile;
using testing::SharedPath;

nlohmann::json LoadGolden(const std::string& name) {
  const std::string path =
      std::string(WEFT_SOURCE_DIR) + "/tests/data/tokenizer/" + name;
  const std::string text = ReadFile(path);
  EXPECT_FALSE(text.empty()) << path;
  return nlohmann::json::parse(text);
}

std::string Stream(const Tokenizer& tok, const std::vector<TokenId>& ids,
                   bool render_special) {
  StreamDetokenizer stream(tok, {.render_special = render_special});
  std::string out;
  for (TokenId id : ids) out += stream.Push(id);
  return out + stream.Flush();
}

TEST(GoldenTest, SentencePieceLlama2) {
  const std::string path = SharedPath("ggml-vocab-llama-spm.gguf");
  if (!FileExists(path)) GTEST_SKIP() << "missing " << path;
  auto tok = LoadTokenizer(path);
  ASSERT_NE(tok, nullptr);
  const nlohmann::json golden = LoadGolden("llama2_sentencepiece.json");
  int checked = 0;
  for (const auto& c : golden["cases"]) {
    const std::string input = FromHex(c["input_hex"]);
    const auto want = c["ids"].get<std::vector<TokenId>>();
    auto ids = tok->Encode(input, {.add_special = false});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, want) << "'" << CEscape(input, 200) << "'";
    if (c["roundtrip"].get<bool>()) {
      EXPECT_EQ(*tok->Decode(*ids), input) << "'" << CEscape(input, 200) << "'";
    }
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

void CheckLlamaCpp(const std::string& model_path, const std::string& golden_name) {
  if (!FileExists(model_path)) GTEST_SKIP() << "missing " << model_path;
  const auto start = std::chrono::steady_clock::now();
  auto tok = LoadTokenizer(model_path);
  ASSERT_NE(tok, nullptr);
  std::printf("  loaded %d tokens in %.1f ms\n", tok->n_tokens(),
              std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start).count());
  const nlohmann::json golden = LoadGolden(golden_name);
  int checked = 0, roundtrips = 0;
  for (const auto& c : golden["cases"]) {
    const std::string input = FromHex(c["input_hex"]);
    const bool add_bos = c["add_bos"];
    const bool special = c["special"];
    const auto want = c["ids"].get<std::vector<TokenId>>();
    auto ids = tok->Encode(input, {.add_special = add_bos, .parse_special = special});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, want) << "'" << CEscape(input, 200) << "' add_bos=" << add_bos
                          << " special=" << special;
    // Decode agrees with llama_detokenize(remove_special, unparse_special).
    auto text = tok->Decode(want, {.remove_special = true, .render_special = special});
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, FromHex(c["decoded_hex"])) << "'" << CEscape(input, 200) << "'";
    if (c["roundtrip"].get<bool>()) {
      EXPECT_EQ(*text, input);
      ++roundtrips;
    }
    // Streaming gives the same text as Decode.
    EXPECT_EQ(Stream(*tok, want, special),
              SanitizeUtf8(*tok->Decode(want, {.render_special = special})));
    ++checked;
  }
  EXPECT_GT(checked, 300);
  EXPECT_GT(roundtrips, 100);
}

TEST(GoldenTest, Gemma3LlamaCpp) {
  CheckLlamaCpp(WEFT_GEMMA_MODEL, "gemma3_llamacpp.json");
}

TEST(GoldenTest, Stories260kLlamaCpp) {
  CheckLlamaCpp(SharedPath("stories260K.gguf"), "stories260k_llamacpp.json");
}

}  // namespace
}  // namespace weft::tokenizer
