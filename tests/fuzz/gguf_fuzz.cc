// libFuzzer target: GgufFile::Parse on arbitrary bytes, then every accessor
// on every key and tensor, then a writer round trip whose result must parse
// and serialize to the same bytes again. Any crash, sanitizer report or
// failed CHECK is a bug.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "gguf/gguf.h"
#include "gguf/writer.h"
#include "util/check.h"

namespace {

using weft::gguf::GgufFile;
using weft::gguf::GgufWriter;

// Keeps results alive so the calls are not optimized away.
volatile uint64_t g_sink = 0;
uint64_t g_acc = 0;

void TouchAccessors(const GgufFile& f, std::string_view key) {
  g_acc += f.Has(key);
  if (auto v = f.GetString(key); v.ok()) g_acc += v->size();
  if (auto v = f.GetUint32(key); v.ok()) g_acc += *v;
  if (auto v = f.GetUint64(key); v.ok()) g_acc += *v;
  if (auto v = f.GetInt64(key); v.ok()) g_acc += static_cast<uint64_t>(*v);
  if (auto v = f.GetFloat32(key); v.ok()) g_acc += *v > 0;
  if (auto v = f.GetBool(key); v.ok()) g_acc += *v;
  if (auto v = f.GetArray(key); v.ok()) g_acc += (*v)->items.size();
  if (auto v = f.GetStringArray(key); v.ok()) g_acc += v->size();
  if (auto v = f.GetFloat32Array(key); v.ok()) g_acc += v->size();
  if (auto v = f.GetInt32Array(key); v.ok()) g_acc += v->size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto parsed = GgufFile::Parse("fuzz.gguf", std::span<const uint8_t>(data, size));
  if (!parsed.ok()) {
    const std::string m = parsed.status().message();
    CHECK(m.find('\n') == std::string::npos) << m;
    CHECK(m.rfind("fuzz.gguf: offset ", 0) == 0) << m;
    return 0;
  }
  const GgufFile& f = **parsed;
  for (const auto& e : f.metadata()) {
    TouchAccessors(f, e.key);
    g_acc += e.value.DebugString().size();
    CHECK(f.Find(e.key) == &e.value);
  }
  TouchAccessors(f, "general.architecture");
  for (const auto& t : f.tensors()) {
    CHECK(f.FindTensor(t.name) == &t);
    CHECK(t.data >= data && t.data + t.nbytes <= data + size);
    if (t.nbytes > 0) g_acc += t.data[0] + t.data[t.nbytes - 1];
    g_acc += t.ne(0) * t.ne(3);
  }
  // Round trip: what the writer makes of a parsed file parses again and is
  // a fixed point of Parse -> CopyFrom -> Serialize.
  GgufWriter w;
  CHECK(w.CopyFrom(f).ok());
  auto out = w.Serialize();
  CHECK(out.ok()) << out.status().ToString();
  auto again = GgufFile::Parse("again.gguf", *out);
  CHECK(again.ok()) << again.status().ToString();
  GgufWriter w2;
  CHECK(w2.CopyFrom(**again).ok());
  auto out2 = w2.Serialize();
  CHECK(out2.ok() && *out2 == *out);
  g_sink = g_acc;
  return 0;
}
