// Replays every committed fuzz input through the fuzz targets' own entry
// points in a normal (non-fuzz) build, so CI exercises them without clang
// or libFuzzer:
//   tests/fuzz/corpus/<target>/*     the merged corpora (seeds included)
//   tests/fuzz/crashes/<target>/*    reproducers of fixed findings
// Reproducers of findings that are not fixed yet are named "open-*" and
// skipped (listed in the test log); fixing the bug means renaming the file
// without the prefix, which turns it into a regression test.
//
// A failing property aborts the process (CHECK in the target), which
// ctest reports as a failure; the file being replayed is printed first.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace weft::fuzz {
void TokenizerFuzzInit();
int TokenizerFuzzOne(const uint8_t* data, size_t size);
int ServerFuzzOne(const uint8_t* data, size_t size);
#ifdef WEFT_REPLAY_CHAT
int ChatFuzzOne(const uint8_t* data, size_t size);
#endif
}  // namespace weft::fuzz

namespace {

namespace fs = std::filesystem;
using OneInput = int (*)(const uint8_t*, size_t);

std::vector<fs::path> Inputs(const std::string& target, int* skipped) {
  std::vector<fs::path> out;
  const fs::path base = fs::path(WEFT_SOURCE_DIR) / "tests" / "fuzz";
  for (const char* kind : {"corpus", "crashes"}) {
    const fs::path dir = base / kind / target;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      if (!e.is_regular_file()) continue;
      const std::string name = e.path().filename().string();
      if (name.rfind("open-", 0) == 0) {
        std::cout << "skipping open finding " << e.path() << "\n";
        ++*skipped;
        continue;
      }
      if (name == "README.md") continue;
      out.push_back(e.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Runs every input of `target`; returns how many ran.
size_t Replay(const std::string& target, OneInput fn) {
  int skipped = 0;
  const std::vector<fs::path> inputs = Inputs(target, &skipped);
  for (const fs::path& p : inputs) {
    const std::string data = ReadAll(p);
    std::cerr << "replay " << p.filename().string() << " (" << data.size()
              << " bytes)\n";
    EXPECT_EQ(fn(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0)
        << p;
  }
  std::cout << target << ": replayed " << inputs.size() << " input(s), skipped "
            << skipped << " open finding(s)\n";
  return inputs.size();
}

bool HaveVocabs() {
  const fs::path dir(WEFT_SHARED_MODELS_DIR);
  return fs::exists(dir / "ggml-vocab-llama-spm.gguf") &&
         fs::exists(dir / "ggml-vocab-gpt-2.gguf");
}

TEST(FuzzReplay, Tokenizer) {
  if (!HaveVocabs()) GTEST_SKIP() << "shared vocabularies missing";
  weft::fuzz::TokenizerFuzzInit();
  EXPECT_GT(Replay("tokenizer", &weft::fuzz::TokenizerFuzzOne), 0u);
}

TEST(FuzzReplay, Server) {
  EXPECT_GT(Replay("server", &weft::fuzz::ServerFuzzOne), 0u);
}

#ifdef WEFT_REPLAY_CHAT
TEST(FuzzReplay, Chat) {
  EXPECT_GT(Replay("chat", &weft::fuzz::ChatFuzzOne), 0u);
}
#endif

// The entry points tolerate the degenerate inputs libFuzzer starts with.
TEST(FuzzReplay, EmptyAndTinyInputs) {
  const uint8_t bytes[2] = {0xff, 0x00};
  EXPECT_EQ(weft::fuzz::ServerFuzzOne(bytes, 0), 0);
  for (uint8_t sel = 0; sel < 4; ++sel) {
    EXPECT_EQ(weft::fuzz::ServerFuzzOne(&sel, 1), 0);
  }
  if (HaveVocabs()) {
    EXPECT_EQ(weft::fuzz::TokenizerFuzzOne(bytes, 0), 0);
    for (int flags = 0; flags < 256; ++flags) {
      const uint8_t f = static_cast<uint8_t>(flags);
      EXPECT_EQ(weft::fuzz::TokenizerFuzzOne(&f, 1), 0);
    }
  }
}

}  // namespace
