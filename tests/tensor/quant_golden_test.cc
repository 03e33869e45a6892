// Checks the reference (de)quantizers against goldens made by independent
// implementations (tools/make_quant_goldens.py): gguf-py's numpy ports for
// F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (quantize and dequantize) and the
// K-quant dequantizers, and ggml's own quantize_row_*_ref (via
// llama-cpp-python's libggml-base) for Q2_K..Q6_K and Q8_K.
//
// Every comparison is bit for bit: gguf-py evaluates the same float32
// operations in the same order as ggml's scalar code (one multiply, or a
// multiply then an add/subtract, per element), so no tolerance is needed.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tensor/quant.h"
#include "tensor/types.h"

namespace weft {
namespace {

struct GoldenCase {
  GgmlType type;
  uint32_t rows = 0;
  uint32_t cols = 0;
  bool has_input = false;
  bool ref_quant = false;
  std::string source;
  std::string name;
  std::vector<float> input;
  std::vector<uint8_t> bytes;
  std::vector<float> dequant;
};

class Reader {
 public:
  explicit Reader(std::vector<uint8_t> data) : data_(std::move(data)) {}
  bool ok() const { return ok_; }
  uint32_t U32() {
    uint32_t v = 0;
    Read(&v, 4);
    return v;
  }
  std::string Str16() {
    char buf[17] = {};
    Read(buf, 16);
    return buf;
  }
  template <typename T>
  std::vector<T> Vec(size_t n) {
    std::vector<T> v(n);
    Read(v.data(), n * sizeof(T));
    return v;
  }
  bool AtEnd() const { return pos_ == data_.size(); }

 private:
  void Read(void* dst, size_t n) {
    if (!ok_ || data_.size() - pos_ < n) {
      ok_ = false;
      return;
    }
    std::memcpy(dst, data_.data() + pos_, n);
    pos_ += n;
  }
  std::vector<uint8_t> data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

std::vector<GoldenCase> LoadGoldens(const std::string& type_name) {
  const std::string path =
      std::string(WEFT_SOURCE_DIR) + "/tests/data/quant/" + type_name + ".bin";
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << "missing golden " << path;
  Reader r(std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {}));
  std::vector<GoldenCase> cases;
  EXPECT_EQ(r.U32(), 0x31475157u) << path;  // "WQG1"
  EXPECT_EQ(r.U32(), 1u);
  const uint32_t n = r.U32();
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    GoldenCase c;
    c.type = static_cast<GgmlType>(r.U32());
    c.rows = r.U32();
    c.cols = r.U32();
    const uint32_t flags = r.U32();
    c.has_input = flags & 1;
    c.ref_quant = flags & 2;
    c.source = r.Str16();
    c.name = r.Str16();
    const size_t elems = static_cast<size_t>(c.rows) * c.cols;
    if (c.has_input) c.input = r.Vec<float>(elems);
    auto row_bytes = RowBytes(c.type, c.cols);
    EXPECT_TRUE(row_bytes.ok());
    if (!row_bytes.ok()) break;
    c.bytes = r.Vec<uint8_t>(c.rows * row_bytes.value());
    c.dequant = r.Vec<float>(elems);
    cases.push_back(std::move(c));
  }
  EXPECT_TRUE(r.ok() && r.AtEnd()) << "malformed golden " << path;
  EXPECT_FALSE(cases.empty());
  return cases;
}

uint32_t Bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

class QuantGoldenTest : public ::testing::TestWithParam<const char*> {};

TEST_P(QuantGoldenTest, DequantizeMatchesReferenceBitForBit) {
  for (const GoldenCase& c : LoadGoldens(GetParam())) {
    SCOPED_TRACE(c.name + " (" + c.source + ")");
    const uint64_t row_bytes = RowBytes(c.type, c.cols).value();
    std::vector<float> out(c.cols);
    for (uint32_t r = 0; r < c.rows; ++r) {
      ASSERT_TRUE(DequantizeRow(c.type, c.bytes.data() + r * row_bytes,
                                out.data(), c.cols)
                      .ok());
      for (uint32_t j = 0; j < c.cols; ++j) {
        const float want = c.dequant[static_cast<size_t>(r) * c.cols + j];
        ASSERT_EQ(Bits(out[j]), Bits(want))
            << "row " << r << " col " << j << ": got " << out[j] << " want "
            << want;
      }
    }
  }
}

TEST_P(QuantGoldenTest, QuantizeMatchesReferenceBytes) {
  int checked = 0;
  for (const GoldenCase& c : LoadGoldens(GetParam())) {
    if (!c.ref_quant) continue;
    SCOPED_TRACE(c.name + " (" + c.source + ")");
    const uint64_t row_bytes = RowBytes(c.type, c.cols).value();
    std::vector<uint8_t> out(row_bytes);
    for (uint32_t r = 0; r < c.rows; ++r) {
      ASSERT_TRUE(
          QuantizeRow(c.type, c.input.data() + r * c.cols, out.data(), c.cols)
              .ok());
      for (uint64_t b = 0; b < row_bytes; ++b) {
        ASSERT_EQ(out[b], c.bytes[r * row_bytes + b])
            << "row " << r << " byte " << b << " (block "
            << b / TypeTraits(c.type).type_size << ")";
      }
    }
    ++checked;
  }
  // The K-quant goldens carry ggml quantizations only when the generator
  // was given --ggml-lib; the committed files were.
  EXPECT_GT(checked, 0) << "no reference quantization in the golden";
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, QuantGoldenTest,
    ::testing::Values("f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
                      "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "q8_k", "iq4_nl", "iq4_xs",
                      "mxfp4"),
    [](const auto& info) { return std::string(info.param); });

}  // namespace
}  // namespace weft
