// libFuzzer target: Tokenizer::Encode / Decode and StreamDetokenizer on the
// llama-spm and gpt-2 test vocabularies from the shared models folder.
//
// Input layout: byte 0 is a flag byte, the rest is the payload.
//   bit 0     vocabulary: 0 = ggml-vocab-llama-spm, 1 = ggml-vocab-gpt-2
//   bits 1-2  mode: 0/1 encode the payload as text, 2 decode ids taken
//             modulo the vocabulary, 3 decode raw int32 ids (mostly out of
//             range: must be rejected with InvalidArgument, never crash)
//   bit 3     EncodeOptions::parse_special
//   bit 4     EncodeOptions::add_special
//   bit 5     render_special (Decode and the stream)
//   bit 6     DecodeOptions::remove_special
// Ids are read from the payload as little-endian 3-byte (modulo mode) or
// 4-byte (raw mode) groups.
//
// Checked properties (a failed CHECK aborts = a finding):
//   * Encode succeeds, every id is in the vocabulary, and without
//     parse_special no control token appears except the BOS/EOS that
//     add_special put there (user text cannot smuggle in "<start_of_turn>").
//   * Decode(Encode(text)) == text for valid UTF-8 text without control
//     token spellings and without U+2581 (SPM's space marker).
//   * Decode fails cleanly (InvalidArgument, one line) iff an id is out of
//     range.
//   * The concatenated StreamDetokenizer output equals
//     SanitizeUtf8(Decode(ids)) and is always valid UTF-8.
//
// The same entry point (weft::fuzz::TokenizerFuzzOne) is replayed over the
// committed corpus by tests/reliability/fuzz_replay_test.cc in normal
// builds; WEFT_FUZZ_REPLAY drops the libFuzzer hooks there.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"
#include "util/check.h"

#ifndef WEFT_SHARED_MODELS_DIR
#define WEFT_SHARED_MODELS_DIR "/work/shared/models"
#endif

namespace weft::fuzz {

namespace {

using tokenizer::DecodeOptions;
using tokenizer::EncodeOptions;
using tokenizer::StreamDetokenizer;
using tokenizer::StreamOptions;
using tokenizer::TokenId;
using tokenizer::Tokenizer;

constexpr const char* kVocabFiles[2] = {"ggml-vocab-llama-spm.gguf",
                                        "ggml-vocab-gpt-2.gguf"};

std::string SharedDir() {
  // Test code may read the environment (the library code below apps/ never
  // does): lets the fuzz binary run from any build tree.
  if (const char* d = std::getenv("WEFT_SHARED_MODELS_DIR"); d && *d) return d;
  return WEFT_SHARED_MODELS_DIR;
}

// A loaded vocabulary plus the spellings of its control/unknown tokens.
struct Loaded {
  std::unique_ptr<Tokenizer> tok;
  std::vector<std::string> specials;
};

Loaded Load(const char* name) {
  const std::string path = SharedDir() + "/" + name;
  auto file = gguf::GgufFile::Open(path);
  CHECK(file.ok()) << "cannot open " << path << ": " << file.status().ToString();
  auto tok = Tokenizer::FromGguf(**file);
  CHECK(tok.ok()) << path << ": " << tok.status().ToString();
  Loaded l;
  l.tok = std::move(tok).value();
  const auto& v = l.tok->vocab();
  for (TokenId id = 0; id < l.tok->n_tokens(); ++id) {
    if (v.attrs[id] & (tokenizer::kAttrControl | tokenizer::kAttrUnknown)) {
      l.specials.push_back(v.tokens[id]);
    }
  }
  return l;
}

const Loaded& Get(int which) {
  static const Loaded* loaded = [] {
    auto* l = new Loaded[2];
    l[0] = Load(kVocabFiles[0]);
    l[1] = Load(kVocabFiles[1]);
    return l;
  }();
  return loaded[which];
}

bool IsControl(const Tokenizer& tok, TokenId id) {
  return (tok.vocab().attrs[id] & tokenizer::kAttrControl) != 0;
}

// Whether `text` spells a control/unknown token anywhere (then the round
// trip may legitimately differ: those render as nothing).
bool MentionsSpecial(const Loaded& l, std::string_view text) {
  for (const std::string& t : l.specials) {
    if (!t.empty() && text.find(t) != std::string_view::npos) return true;
  }
  return false;
}

// Streams `ids` one at a time; returns the concatenated text.
std::string StreamAll(const Tokenizer& tok, std::span<const TokenId> ids,
                      bool render_special) {
  StreamOptions so;
  so.render_special = render_special;
  so.strip_leading_space = true;
  StreamDetokenizer stream(tok, so);
  std::string out;
  for (TokenId id : ids) {
    std::string piece = stream.Push(id);
    CHECK(tokenizer::IsValidUtf8(piece));
    CHECK_LE(stream.pending_bytes(), 3u);
    out += piece;
  }
  std::string tail = stream.Flush();
  CHECK(tokenizer::IsValidUtf8(tail));
  CHECK_EQ(stream.pending_bytes(), 0u);
  out += tail;
  return out;
}

void CheckDecodeAndStream(const Tokenizer& tok, std::span<const TokenId> ids,
                          bool render_special, bool remove_special) {
  bool all_valid = true;
  for (TokenId id : ids) all_valid &= id >= 0 && id < tok.n_tokens();
  DecodeOptions d;
  d.render_special = render_special;
  d.remove_special = remove_special;
  auto text = tok.Decode(ids, d);
  if (!all_valid) {
    CHECK(!text.ok());
    CHECK(text.status().code() == StatusCode::kInvalidArgument);
    CHECK(text.status().message().find('\n') == std::string::npos);
    // The stream skips invalid ids; its output must still be valid UTF-8.
    StreamAll(tok, ids, render_special);
    return;
  }
  CHECK(text.ok()) << text.status().ToString();
  if (!remove_special) {
    std::string streamed = StreamAll(tok, ids, render_special);
    CHECK(streamed == tokenizer::SanitizeUtf8(*text))
        << "stream and Decode disagree on " << ids.size() << " ids";
  }
  for (TokenId id : ids) {
    std::string_view piece = tok.TokenToPiece(id, render_special);
    if (!render_special && IsControl(tok, id)) CHECK(piece.empty());
  }
}

void FuzzEncode(const Loaded& l, std::string_view text, uint8_t flags) {
  const Tokenizer& tok = *l.tok;
  EncodeOptions e;
  e.parse_special = flags & 0x08;
  e.add_special = flags & 0x10;
  const bool render = flags & 0x20;
  const bool remove = flags & 0x40;
  auto ids = tok.Encode(text, e);
  CHECK(ids.ok()) << ids.status().ToString();
  const auto& v = tok.vocab();
  const std::vector<TokenId>& out = *ids;
  for (size_t i = 0; i < out.size(); ++i) {
    const TokenId id = out[i];
    CHECK(id >= 0 && id < tok.n_tokens()) << "id " << id;
    if (!e.parse_special && IsControl(tok, id)) {
      const bool added_bos = e.add_special && v.add_bos && i == 0 && id == v.bos;
      const bool added_eos =
          e.add_special && v.add_eos && i + 1 == out.size() && id == v.eos;
      CHECK(added_bos || added_eos)
          << "control token " << id << " from plain text at " << i;
    }
  }
  if (text.empty() && !e.add_special) CHECK(out.empty());

  CheckDecodeAndStream(tok, out, render, remove);

  // Round trip: plain text comes back unchanged.
  if (!e.add_special && !render && tokenizer::IsValidUtf8(text) &&
      text.find("\xE2\x96\x81") == std::string_view::npos &&
      !MentionsSpecial(l, text)) {
    auto back = tok.Decode(out);
    CHECK(back.ok());
    CHECK(*back == text) << "round trip changed " << text.size() << " bytes";
  }
}

}  // namespace

void TokenizerFuzzInit() {
  Get(0);
  Get(1);
}

int TokenizerFuzzOne(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t flags = data[0];
  const Loaded& l = Get(flags & 1);
  const Tokenizer& tok = *l.tok;
  const std::string_view payload(reinterpret_cast<const char*>(data + 1), size - 1);
  const int mode = (flags >> 1) & 3;
  if (mode < 2) {
    FuzzEncode(l, payload, flags);
    return 0;
  }
  std::vector<TokenId> ids;
  const size_t width = mode == 2 ? 3 : 4;
  for (size_t i = 0; i + width <= payload.size(); i += width) {
    uint32_t raw = 0;
    for (size_t b = 0; b < width; ++b) {
      raw |= static_cast<uint32_t>(static_cast<uint8_t>(payload[i + b])) << (8 * b);
    }
    if (mode == 2) {
      ids.push_back(static_cast<TokenId>(raw % static_cast<uint32_t>(tok.n_tokens())));
    } else {
      int32_t id;
      std::memcpy(&id, &raw, sizeof id);
      ids.push_back(id);
    }
  }
  CheckDecodeAndStream(tok, ids, flags & 0x20, flags & 0x40);
  return 0;
}

}  // namespace weft::fuzz

#ifndef WEFT_FUZZ_REPLAY
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weft::fuzz::TokenizerFuzzInit();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return weft::fuzz::TokenizerFuzzOne(data, size);
}
#endif
