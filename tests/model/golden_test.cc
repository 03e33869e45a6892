// Checks the forward pass against goldens from the independent float64
// numpy reference (tools/make_model_goldens.py): last-prompt-position
// logits within a tolerance, and 64 greedy tokens exactly (batched prompt
// prefill, then one token at a time through the KV cache).
#include <gtest/gtest.h>
#include <stdio.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/model.h"

namespace weft::model {
namespace {

using json = nlohmann::json;

json ReadGolden(const std::string& name) {
  std::ifstream f(std::string(WEFT_SOURCE_DIR) + "/tests/data/model/" + name);
  EXPECT_TRUE(f.good()) << "missing golden " << name;
  std::stringstream ss;
  ss << f.rdbuf();
  return json::parse(ss.str());
}

bool FileExists(const std::string& path) { return std::ifstream(path).good(); }

int32_t Argmax(const float* v, int64_t n) {
  return static_cast<int32_t>(std::max_element(v, v + n) - v);
}

// `tolerance`: max |logit - reference| allowed at the last prompt position.
void CheckGolden(const std::string& model_path, const json& g, float tolerance) {
  auto model_or = Model::Load(model_path);
  ASSERT_TRUE(model_or.ok()) << model_or.status().ToString();
  const Model& model = **model_or;
  const int64_t V = model.config().n_vocab;
  ASSERT_EQ(V, g["n_vocab"].get<int64_t>());
  const int n_greedy = g["n_greedy"].get<int>();
  ForwardOptions opts;
  opts.n_threads = 2;
  for (const json& p : g["prompts"]) {
    SCOPED_TRACE(p["text"].get<std::string>());
    std::vector<int32_t> ids = p["ids"].get<std::vector<int32_t>>();
    auto kv = ContiguousKvCache::Create(model.config(),
                                        static_cast<int32_t>(ids.size()) + n_greedy + 1);
    ASSERT_TRUE(kv.ok());
    std::vector<float> logits;
    Status s = model.Forward(Batch::ForPrompt(ids), kv->get(), &logits, opts);
    ASSERT_TRUE(s.ok()) << s.ToString();
    ASSERT_EQ(logits.size(), static_cast<size_t>(V));
    float max_diff = 0;
    if (p.contains("logits")) {
      std::vector<float> want = p["logits"].get<std::vector<float>>();
      ASSERT_EQ(want.size(), static_cast<size_t>(V));
      for (int64_t i = 0; i < V; ++i) max_diff = std::max(max_diff, std::fabs(logits[i] - want[i]));
    } else {
      std::vector<int32_t> top = p["top_ids"].get<std::vector<int32_t>>();
      std::vector<float> want = p["top_logits"].get<std::vector<float>>();
      for (size_t i = 0; i < top.size(); ++i) {
        max_diff = std::max(max_diff, std::fabs(logits[top[i]] - want[i]));
      }
      // No token outside the reference top-k may beat the k-th logit by more
      // than the tolerance.
      float kth = want.back();
      std::vector<uint8_t> in_top(static_cast<size_t>(V), 0);
      for (int32_t t : top) in_top[t] = 1;
      for (int64_t i = 0; i < V; ++i) {
        if (!in_top[i]) {
          EXPECT_LE(logits[i], kth + tolerance) << "token " << i;
        }
      }
    }
    EXPECT_LE(max_diff, tolerance);
    printf("[ %s ] max |logit diff| = %.6f (tolerance %.4f)\n",
           g["model"].get<std::string>().c_str(), max_diff, tolerance);

    std::vector<int32_t> want_greedy = p["greedy"].get<std::vector<int32_t>>();
    std::vector<int32_t> got;
    int32_t pos = static_cast<int32_t>(ids.size());
    for (int i = 0; i < n_greedy; ++i) {
      int32_t t = Argmax(logits.data(), V);
      got.push_back(t);
      Batch b;
      b.Add(t, pos++, 0, true);
      s = model.Forward(b, kv->get(), &logits, opts);
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
    EXPECT_EQ(got, want_greedy);
  }
}

// stories260K is all F32: the only differences from the float64 reference
// are float32 rounding in ~5 layers of 64-wide dots (observed ~1e-5).
// 1e-3 leaves ample room yet catches any real formula error (those move
// logits by > 0.1). Greedy margins in the golden are >= 0.017.
TEST(GoldenTest, Stories260K) {
  const std::string path = std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
  if (!FileExists(path)) GTEST_SKIP() << "no " << path;
  CheckGolden(path, ReadGolden("stories260K.json"), 1e-4f);
}

// Gemma 3 270M Q4_K_M: same dequantized weights as the reference, float32
// activations through 18 layers whose norm weights reach ~300 and whose
// logits are ~20 in magnitude; float32 accumulation error there is ~1e-3
// (observed below 0.01). 0.03 is >10x smaller than any real mistake (a
// missing +1 in norms, wrong RoPE layout or window moves logits by > 0.5).
TEST(GoldenTest, Gemma3_270M) {
  const std::string path = WEFT_DEFAULT_MODEL;
  if (!FileExists(path)) GTEST_SKIP() << "no " << path;
  CheckGolden(path, ReadGolden("gemma3-270m.json"), 2e-3f);
}

// Synthetic qwen2 (random Q8_0 weights) regenerated with `weft make-model`
// exactly as the golden records; its sha256 must match the golden's.
TEST(GoldenTest, Qwen2Synthetic) {
  const std::string golden = std::string(WEFT_SOURCE_DIR) + "/tests/data/model/qwen2-synthetic.json";
  if (!FileExists(golden)) GTEST_SKIP() << "no qwen2 golden yet";
  json g = ReadGolden("qwen2-synthetic.json");
  std::string cmd = std::string(WEFT_BINARY) + " make-model";
  for (const json& a : g["make_model_args"]) {
    std::string s = a.get<std::string>();
    size_t at = s.find("{shared}");
    if (at != std::string::npos) s.replace(at, 8, WEFT_SHARED_MODELS_DIR);
    cmd += " '" + s + "'";
  }
  const std::string out = ::testing::TempDir() + "/qwen2-synthetic.gguf";
  cmd += " -o '" + out + "' >/dev/null 2>&1";
  ASSERT_EQ(system(cmd.c_str()), 0) << cmd;
  // sha256 via coreutils, to detect make-model drift.
  FILE* f = popen(("sha256sum '" + out + "'").c_str(), "r");
  ASSERT_NE(f, nullptr);
  char buf[65] = {0};
  ASSERT_EQ(fread(buf, 1, 64, f), 64u);
  pclose(f);
  ASSERT_EQ(std::string(buf), g["model_sha256"].get<std::string>())
      << "weft make-model output changed; regenerate the golden";
  // Random small weights: logits are O(1); float32 error ~1e-6.
  CheckGolden(out, g, 1e-3f);
}

}  // namespace
}  // namespace weft::model
