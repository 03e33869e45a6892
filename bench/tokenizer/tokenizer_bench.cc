// Encode / decode throughput of the tokenizers, in MB/s of input text:
//   tokenizer_bench [--benchmark_filter=...]
// Vocabularies: the default Gemma 3 model (262144-token SPM) and GPT-2
// (byte-level BPE), on ~1 MB of English and ~1 MB of mixed Unicode text.
// Also times loading the Gemma vocabulary.
#include <benchmark/benchmark.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "gguf/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace weft::tokenizer {
namespace {

constexpr size_t kTextBytes = 1 << 20;

std::string Repeat(const std::string& unit) {
  std::string s;
  while (s.size() < kTextBytes) s += unit;
  return s;
}

const std::string& EnglishText() {
  static const std::string* s = new std::string(Repeat(
      "It was a bright cold day in April, and the clocks were striking "
      "thirteen. Winston Smith, his chin nuzzled into his breast in an effort "
      "to escape the vile wind, slipped quickly through the glass doors of "
      "Victory Mansions, though not quickly enough to prevent a swirl of "
      "gritty dust from entering along with him. The hallway smelt of boiled "
      "cabbage and old rag mats; at one end of it a coloured poster, too large "
      "for indoor display, had been tacked to the wall.\n\n"));
  return *s;
}

const std::string& MixedText() {
  static const std::string* s = new std::string(Repeat(
      "Tokenizers meet 世界 and 日本語のテキスト, Ελληνικά, Русский текст, "
      "हिन्दी, العربية, emoji 😀👍🏽🇺🇸, café naïve, code `for (i = 0; i < n; ++i)` "
      "and numbers 3.14159 1,000,000.\n\t  indented line\n"));
  return *s;
}

// Tokenizers load once per process; null if the file is missing.
const Tokenizer* Get(const std::string& path) {
  static std::map<std::string, std::unique_ptr<Tokenizer>>* cache =
      new std::map<std::string, std::unique_ptr<Tokenizer>>();
  auto it = cache->find(path);
  if (it != cache->end()) return it->second.get();
  std::unique_ptr<Tokenizer> tok;
  if (auto file = gguf::GgufFile::Open(path); file.ok()) {
    if (auto t = Tokenizer::FromGguf(**file); t.ok()) tok = std::move(t).value();
  }
  return (*cache)[path] = std::move(tok), (*cache)[path].get();
}

std::string GemmaPath() { return WEFT_DEFAULT_MODEL; }
std::string Gpt2Path() { return std::string(WEFT_SHARED_MODELS_DIR) + "/ggml-vocab-gpt-2.gguf"; }

void BM_Encode(benchmark::State& state, std::string (*path)(), const std::string& (*text)()) {
  const Tokenizer* tok = Get(path());
  if (tok == nullptr) {
    state.SkipWithError("vocabulary not found");
    return;
  }
  const std::string& input = text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    auto ids = tok->Encode(input, {.add_special = false});
    n_tokens = ids->size();
    benchmark::DoNotOptimize(ids);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
}

void BM_Decode(benchmark::State& state, std::string (*path)()) {
  const Tokenizer* tok = Get(path());
  if (tok == nullptr) {
    state.SkipWithError("vocabulary not found");
    return;
  }
  const std::vector<TokenId> ids = *tok->Encode(EnglishText(), {.add_special = false});
  for (auto _ : state) {
    StreamDetokenizer stream(*tok);
    size_t n = 0;
    for (TokenId id : ids) n += stream.Push(id).size();
    benchmark::DoNotOptimize(n);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * EnglishText().size()));
}

void BM_LoadGemmaVocab(benchmark::State& state) {
  auto file = gguf::GgufFile::Open(GemmaPath());
  if (!file.ok()) {
    state.SkipWithError("default model not found");
    return;
  }
  for (auto _ : state) {
    auto tok = Tokenizer::FromGguf(**file);
    benchmark::DoNotOptimize(tok);
  }
}

BENCHMARK_CAPTURE(BM_Encode, gemma_english, GemmaPath, EnglishText)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gemma_mixed, GemmaPath, MixedText)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2_english, Gpt2Path, EnglishText)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt2_mixed, Gpt2Path, MixedText)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Decode, gemma_stream, GemmaPath)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LoadGemmaVocab)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace weft::tokenizer

BENCHMARK_MAIN();
