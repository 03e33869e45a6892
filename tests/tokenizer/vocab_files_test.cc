// llama.cpp's tokenizer test vectors (test-tokenizer-0 convention) for the
// Llama SPM and GPT-2 vocabularies, plus hostile inputs on real vocabs.
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "test_util.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/unicode.h"

namespace weft::tokenizer {
namespace {

using testing::FileExists;
using testing::LoadTokenizer;
using testing::ReadFile;
using testing::SharedPath;

// .inp: inputs, each followed by "\n__ggml_vocab_test__\n".
// .out: one line per input with its ids (no BOS), space separated.
void CheckVectors(const std::string& vocab_name) {
  const std::string base = SharedPath(vocab_name);
  if (!FileExists(base)) GTEST_SKIP() << "missing " << base;
  auto tok = LoadTokenizer(base);
  ASSERT_NE(tok, nullptr);
  const std::string inp = ReadFile(base + ".inp");
  const std::string out = ReadFile(base + ".out");
  const std::string sep = "\n__ggml_vocab_test__\n";
  std::vector<std::string> inputs;
  size_t pos = 0;
  while (true) {
    const size_t hit = inp.find(sep, pos);
    if (hit == std::string::npos) break;
    inputs.push_back(inp.substr(pos, hit - pos));
    pos = hit + sep.size();
  }
  std::vector<std::vector<TokenId>> expected;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream ids(line);
    std::vector<TokenId> v;
    TokenId id;
    while (ids >> id) v.push_back(id);
    expected.push_back(v);
  }
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 30u);
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto ids = tok->Encode(inputs[i], {.add_special = false, .parse_special = false});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, expected[i]) << "case " << i << ": '" << CEscape(inputs[i], 200) << "'";
    // Streaming gives the same text as Decode.
    StreamDetokenizer stream(*tok);
    std::string streamed;
    for (TokenId id : *ids) streamed += stream.Push(id);
    streamed += stream.Flush();
    EXPECT_EQ(streamed, SanitizeUtf8(*tok->Decode(*ids))) << "case " << i;
  }
}

TEST(VocabFilesTest, LlamaSpmVectors) { CheckVectors("ggml-vocab-llama-spm.gguf"); }
TEST(VocabFilesTest, Gpt2Vectors) { CheckVectors("ggml-vocab-gpt-2.gguf"); }

TEST(VocabFilesTest, VocabMetadata) {
  const std::string path = SharedPath("ggml-vocab-gpt-2.gguf");
  if (!FileExists(path)) GTEST_SKIP();
  auto tok = LoadTokenizer(path);
  ASSERT_NE(tok, nullptr);
  const Vocab& v = tok->vocab();
  EXPECT_EQ(v.kind, VocabKind::kGpt2);
  EXPECT_EQ(v.size(), 50257);
  EXPECT_EQ(v.merges.size(), 50000u);
  EXPECT_EQ(v.bos, 50256);
  EXPECT_EQ(v.eot, 50256);
  EXPECT_TRUE(v.IsEog(50256));
  EXPECT_FALSE(v.add_bos);
  // Control token text is plain text unless parse_special.
  auto plain = tok->Encode("<|endoftext|>", {.add_special = false});
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);
  auto special = tok->Encode("<|endoftext|>", {.add_special = false, .parse_special = true});
  EXPECT_EQ(*special, std::vector<TokenId>{50256});
}

// Hostile inputs must tokenize (and round-trip through Decode) without
// crashing. No timing assertions: they only have to finish.
void CheckHostile(const std::string& vocab_name) {
  const std::string path = SharedPath(vocab_name);
  if (!FileExists(path)) GTEST_SKIP();
  auto tok = LoadTokenizer(path);
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(42);
  std::string random_bytes(1 << 20, '\0');
  for (char& c : random_bytes) c = static_cast<char>(rng());
  std::string random_utf8;
  const char* pieces[] = {"a", " ", "\n", "é", "中", "😀", "\t", "1", "'", "<", "\xcc\x81"};
  while (random_utf8.size() < (1 << 20)) random_utf8 += pieces[rng() % 11];
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"a x 100k", std::string(100000, 'a')},
      {"space x 100k", std::string(100000, ' ')},
      {"newline x 100k", std::string(100000, '\n')},
      {"ab x 50k", [] { std::string s; for (int i = 0; i < 50000; ++i) s += "ab"; return s; }()},
      {"digits x 100k", std::string(100000, '7')},
      {"emoji x 20k", [] { std::string s; for (int i = 0; i < 20000; ++i) s += "😀"; return s; }()},
      {"NUL x 10k", std::string(10000, '\0')},
      {"1 MiB random bytes", random_bytes},
      {"1 MiB random UTF-8", random_utf8},
      {"lone continuation bytes", std::string(1000, '\x80')},
  };
  for (const auto& [name, text] : inputs) {
    const auto start = std::chrono::steady_clock::now();
    auto ids = tok->Encode(text, {.add_special = false, .parse_special = false});
    ASSERT_TRUE(ids.ok()) << name;
    EXPECT_FALSE(ids->empty()) << name;
    for (TokenId id : *ids) ASSERT_TRUE(tok->vocab().Valid(id)) << name;
    auto text2 = tok->Decode(*ids);
    ASSERT_TRUE(text2.ok()) << name;
    if (IsValidUtf8(text)) {
      EXPECT_EQ(*text2, text) << name;
    }
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count();
    std::printf("  %-26s %8zu bytes -> %8zu tokens  %8.1f ms\n", name.c_str(),
                text.size(), ids->size(), ms);
  }
}

TEST(HostileInputTest, LlamaSpm) { CheckHostile("ggml-vocab-llama-spm.gguf"); }
TEST(HostileInputTest, Gpt2) { CheckHostile("ggml-vocab-gpt-2.gguf"); }

TEST(HostileInputTest, OversizedInputIsAnError) {
  const std::string path = SharedPath("ggml-vocab-gpt-2.gguf");
  if (!FileExists(path)) GTEST_SKIP();
  auto tok = LoadTokenizer(path);
  ASSERT_NE(tok, nullptr);
  std::string huge(Tokenizer::kMaxInputBytes + 1, 'a');
  EXPECT_FALSE(tok->Encode(huge).ok());
}

}  // namespace
}  // namespace weft::tokenizer
