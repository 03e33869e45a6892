// Byte-exact round trip of real files: Open -> CopyFrom -> Serialize must
// equal the original bytes. Also checks what the parser reads from them.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "tests/gguf/roundtrip.h"

namespace weft::gguf {
namespace {

std::string Shared(const char* name) {
  return std::string(WEFT_SHARED_MODELS_DIR) + "/" + name;
}

TEST(GgufRoundTrip, Stories260K) {
  ExpectRoundTrip(Shared("stories260K.gguf"));
}

TEST(GgufRoundTrip, VocabOnlyFiles) {
  ExpectRoundTrip(Shared("ggml-vocab-llama-spm.gguf"));
  ExpectRoundTrip(Shared("ggml-vocab-gpt-2.gguf"));
}

// Files written by gguf-py (tests/fuzz/make_gguf_corpus.py): every value
// type, nested arrays, several tensor types, version 2, alignment 64, no
// tensors at all.
TEST(GgufRoundTrip, GgufPyWrittenFiles) {
  std::string dir = std::string(WEFT_SOURCE_DIR) + "/tests/fuzz/corpus/gguf/";
  for (const char* name :
       {"all_types.gguf", "empty.gguf", "one_tensor.gguf",
        "one_tensor_v2.gguf", "tensors.gguf", "tensors_align64.gguf"}) {
    SCOPED_TRACE(name);
    ExpectRoundTrip(dir + name);
  }
  auto f = GgufFile::Open(dir + "tensors_align64.gguf");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ((*f)->alignment(), 64u);
  EXPECT_EQ((*f)->FindTensor("d.weight")->type, GgmlType::kQ4_K);
  auto nested = GgufFile::Open(dir + "all_types.gguf");
  ASSERT_TRUE(nested.ok()) << nested.status().ToString();
  const Array* a = *(*nested)->GetArray("nested");
  EXPECT_EQ(a->elem_type, ValueType::kArray);
  EXPECT_EQ(a->items.size(), 2u);
}

TEST(GgufRoundTrip, Stories260KContents) {
  auto f = GgufFile::Open(Shared("stories260K.gguf"));
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  const GgufFile& g = **f;
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.file_size(), 1185376u);
  EXPECT_EQ(g.data_offset(), 14176u);
  EXPECT_EQ(*g.GetString("general.architecture"), "llama");
  EXPECT_EQ(*g.GetUint32("llama.embedding_length"), 64u);
  EXPECT_EQ(*g.GetUint32("llama.block_count"), 5u);
  EXPECT_EQ(*g.GetUint32("llama.attention.head_count_kv"), 4u);
  EXPECT_FLOAT_EQ(*g.GetFloat32("llama.attention.layer_norm_rms_epsilon"), 1e-5f);
  EXPECT_EQ(g.GetStringArray("tokenizer.ggml.tokens")->size(), 512u);
  EXPECT_EQ(g.GetInt32Array("tokenizer.ggml.token_type")->size(), 512u);
  EXPECT_EQ(g.tensors().size(), 48u);
  const TensorInfo* emb = g.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->dims, (std::vector<uint64_t>{64, 512}));
  EXPECT_EQ(emb->type, GgmlType::kF32);
  // output.weight is a bit-identical copy of token_embd.weight.
  const TensorInfo* out = g.FindTensor("output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_TRUE(std::equal(emb->bytes().begin(), emb->bytes().end(),
                         out->bytes().begin(), out->bytes().end()));
}

}  // namespace
}  // namespace weft::gguf
