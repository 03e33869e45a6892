// runtime::BuildBackend on a real (tiny) model file: what it reports, how it
// sizes the context from the KV budget, and the errors it gives.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine_builder.h"
#include "runtime/model_facts.h"

namespace weft::runtime {
namespace {

EngineConfig Stories() {
  EngineConfig c;
  c.model_path = std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
  c.threads = 1;
  c.scheduler.max_model_len = 0;  // as `weft serve` without --ctx
  return c;
}

TEST(EngineBuilder, BuildsAndReportsTheModel) {
  EngineSummary s;
  auto b = BuildBackend(Stories(), &s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  const server::ModelInfo mi = (*b)->model_info();
  EXPECT_EQ(mi.id, "stories260K");
  // No general.file_type: the type name of most weight bytes.
  EXPECT_EQ(mi.quantization, "f32");
  EXPECT_EQ(mi.context_length, s.max_model_len);
  EXPECT_GT(s.max_model_len, 0);
  EXPECT_LE(s.max_model_len, 4096);
  EXPECT_EQ(mi.chat_template, s.chat_template);
  EXPECT_GT(s.kv_blocks, 0);
  EXPECT_GT(s.kv_bytes, 0u);
  EXPECT_LE(s.kv_bytes, Stories().kv_bytes);
  EXPECT_GT(s.weight_bytes, 0u);
  EXPECT_EQ(s.kv_type, "f16");
  EXPECT_EQ((*b)->engine_info().threads, 1);
  EXPECT_EQ((*b)->engine_info().kv_bytes, static_cast<int64_t>(s.kv_bytes));
  auto ids = (*b)->Tokenize("Once upon a time", /*add_special=*/true,
                            /*parse_special=*/false);
  ASSERT_TRUE(ids.ok()) << ids.status().ToString();
  EXPECT_FALSE(ids->empty());
  (*b)->StartDraining();
}

TEST(EngineBuilder, ModelIdOverridesTheFileStem) {
  EngineConfig c = Stories();
  c.model_id = "tiny";
  auto b = BuildBackend(c, nullptr);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)->model_info().id, "tiny");
}

TEST(EngineBuilder, ContextIsCappedToWhatTheKvCacheHolds) {
  EngineSummary full;
  ASSERT_TRUE(BuildBackend(Stories(), &full).ok());
  EngineConfig c = Stories();
  const uint64_t per_token =
      full.kv_bytes / static_cast<uint64_t>(full.kv_blocks * c.kv_block_size);
  c.kv_bytes = per_token * 256;  // 16 blocks
  EngineSummary s;
  auto b = BuildBackend(c, &s);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_LT(s.max_model_len, full.max_model_len);
  EXPECT_EQ((*b)->model_info().context_length, s.max_model_len);
}

TEST(EngineBuilder, AContextTheKvCacheCannotHoldIsAnError) {
  EngineConfig c = Stories();
  c.scheduler.max_model_len = 1 << 20;
  c.kv_bytes = 1 << 20;
  auto b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(b.status().message().find("--ctx"), std::string::npos)
      << b.status().ToString();
}

TEST(EngineBuilder, BadKvTypeAndMissingFileAreErrors) {
  EngineConfig c = Stories();
  c.kv_type = "f8";
  auto b = BuildBackend(c, nullptr);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), StatusCode::kInvalidArgument);
  c = Stories();
  c.model_path += ".missing";
  EXPECT_FALSE(BuildBackend(c, nullptr).ok());
}

TEST(ModelFacts, FileTypeNames) {
  EXPECT_EQ(FileTypeName(15), "Q4_K_M");
  EXPECT_EQ(FileTypeName(3), "Q4_1");
  EXPECT_EQ(FileTypeName(4), "");  // retired Q4_1_SOME_F16
}

TEST(ModelFacts, FileTypeOfOneTypeFiles) {
  EXPECT_EQ(FileTypeOf(GgmlType::kF32), 0u);
  EXPECT_EQ(FileTypeOf(GgmlType::kQ8_0), 7u);
  EXPECT_EQ(FileTypeOf(GgmlType::kQ2_K), 10u);
  EXPECT_EQ(FileTypeOf(GgmlType::kQ4_K), 14u);  // Q4_K_S
  EXPECT_EQ(FileTypeOf(GgmlType::kIQ4_XS), 30u);
  EXPECT_EQ(FileTypeOf(GgmlType::kBF16), 32u);
  EXPECT_EQ(FileTypeOf(GgmlType::kQ8_K), std::nullopt);  // activations only
}

}  // namespace
}  // namespace weft::runtime
