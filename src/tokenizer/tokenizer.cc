#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "gguf/gguf.h"
#include "tokenizer/spm.h"
#include "tokenizer/unicode.h"
#include "util/strings.h"

namespace weft::tokenizer {

namespace {

constexpr std::string_view kSpaceMarker = "\xe2\x96\x81";  // U+2581 "▁"
constexpr uint32_t kSpecialAttrs = kAttrControl | kAttrUserDefined | kAttrUnknown;

std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(s.substr(pos, hit - pos)).append(to);
    pos = hit + from.size();
  }
  out.append(s.substr(pos));
  return out;
}

// The bytes of token `id` with special tokens rendered (llama.cpp's
// token_to_piece with special = true).
std::string RenderPiece(const Vocab& v, TokenId id) {
  const std::string& text = v.tokens[id];
  const uint32_t attr = v.attrs[id];
  if (attr & kSpecialAttrs) return text;
  if (attr & kAttrNormal) {
    if (v.kind == VocabKind::kLlama) return ReplaceAll(text, kSpaceMarker, " ");
    std::string out;
    size_t pos = 0;
    while (pos < text.size()) {
      const size_t start = pos;
      const int b = UnicodeToByte(DecodeUtf8Lenient(text, &pos));
      if (b >= 0) {
        out.push_back(static_cast<char>(b));
      } else {
        out.append(text, start, pos - start);  // not a mapped byte: keep it
      }
    }
    return out;
  }
  if (attr & kAttrByte) {
    // "<0xNN>"
    if (text.size() == 6 && HexDigit(text[3]) >= 0 && HexDigit(text[4]) >= 0) {
      return std::string(1, static_cast<char>(HexDigit(text[3]) * 16 + HexDigit(text[4])));
    }
    return text;
  }
  return "";  // unused / undefined tokens render as nothing
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(Vocab vocab) {
  if (vocab.index.size() != vocab.tokens.size() || vocab.byte_tokens.size() != 256) {
    RETURN_IF_ERROR(FinalizeVocab(&vocab));
  }
  std::unique_ptr<Tokenizer> tok(new Tokenizer(std::move(vocab)));
  RETURN_IF_ERROR(tok->Init());
  return tok;
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::FromGguf(const gguf::GgufFile& file) {
  ASSIGN_OR_RETURN(Vocab vocab, LoadVocab(file));
  return Create(std::move(vocab));
}

Status Tokenizer::Init() {
  if (vocab_.kind == VocabKind::kGpt2) {
    ASSIGN_OR_RETURN(bpe_, BpeEncoder::Create(vocab_));
  }
  pieces_.resize(vocab_.tokens.size());
  std::map<size_t, SpecialClass, std::greater<>> classes;
  for (TokenId id = 0; id < vocab_.size(); ++id) {
    pieces_[id] = RenderPiece(vocab_, id);
    const uint32_t attr = vocab_.attrs[id];
    if (!(attr & kSpecialAttrs)) continue;
    const std::string& text = vocab_.tokens[id];
    SpecialClass& cls = classes[text.size()];
    if (cls.len == 0) {
      cls.len = text.size();
      cls.prefix_any.assign(65536, false);
      cls.prefix_user.assign(65536, false);
    }
    const bool user = !(attr & (kAttrControl | kAttrUnknown));
    // For one-byte tokens every second byte is allowed.
    const unsigned b0 = static_cast<uint8_t>(text[0]);
    for (unsigned b1 = 0; b1 < 256; ++b1) {
      if (text.size() > 1 && b1 != static_cast<uint8_t>(text[1])) continue;
      cls.prefix_any[b0 << 8 | b1] = true;
      if (user) cls.prefix_user[b0 << 8 | b1] = true;
    }
    cls.has_user |= user;
  }
  for (auto& [len, cls] : classes) specials_.push_back(std::move(cls));
  return OkStatus();
}

std::vector<Tokenizer::Fragment> Tokenizer::Partition(std::string_view text,
                                                      bool parse_special) const {
  std::vector<Fragment> frags;
  if (text.empty()) return frags;
  frags.push_back({kNoToken, 0, static_cast<uint32_t>(text.size())});
  std::vector<Fragment> next;
  for (const SpecialClass& cls : specials_) {
    if (!parse_special && !cls.has_user) continue;
    const std::vector<bool>& prefixes = parse_special ? cls.prefix_any : cls.prefix_user;
    next.clear();
    bool changed = false;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken || f.end - f.begin < cls.len) {
        next.push_back(f);
        continue;
      }
      uint32_t last = f.begin;
      uint32_t pos = f.begin;
      while (pos + cls.len <= f.end) {
        const unsigned b0 = static_cast<uint8_t>(text[pos]);
        const unsigned b1 = cls.len > 1 ? static_cast<uint8_t>(text[pos + 1]) : 0;
        if (!prefixes[b0 << 8 | b1]) {
          ++pos;
          continue;
        }
        const TokenId id = vocab_.Find(text.substr(pos, cls.len));
        const uint32_t attr = id == kNoToken ? 0 : vocab_.attrs[id];
        if (!(attr & kSpecialAttrs) ||
            (!parse_special && (attr & (kAttrControl | kAttrUnknown)))) {
          ++pos;
          continue;
        }
        uint32_t left_end = pos;
        if (attr & kAttrLstrip) {
          while (left_end > last && std::isspace(static_cast<uint8_t>(text[left_end - 1]))) {
            --left_end;
          }
        }
        if (left_end > last) next.push_back({kNoToken, last, left_end});
        next.push_back({id, pos, static_cast<uint32_t>(pos + cls.len)});
        pos += static_cast<uint32_t>(cls.len);
        if (attr & kAttrRstrip) {
          while (pos < f.end && std::isspace(static_cast<uint8_t>(text[pos]))) ++pos;
        }
        last = pos;
        changed = true;
      }
      if (last < f.end) next.push_back({kNoToken, last, f.end});
    }
    if (changed) frags.swap(next);
  }
  return frags;
}

StatusOr<std::vector<TokenId>> Tokenizer::Encode(std::string_view text,
                                                 const EncodeOptions& options) const {
  if (text.size() > kMaxInputBytes) {
    return InvalidArgumentError(StrFormat("text of %zu bytes is over the %zu byte limit",
                                          text.size(), kMaxInputBytes));
  }
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 4);
  const bool add_bos = options.add_special && vocab_.add_bos && vocab_.bos != kNoToken;
  const bool add_eos = options.add_special && vocab_.add_eos && vocab_.eos != kNoToken;
  if (add_bos) out.push_back(vocab_.bos);
  const std::vector<Fragment> frags = Partition(text, options.parse_special);
  if (vocab_.kind == VocabKind::kLlama) {
    bool prev_special = true;  // a dummy space prefix goes before the first text
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (vocab_.add_space_prefix && prev_special) buf.push_back(' ');
      buf.append(text.substr(f.begin, f.end - f.begin));
      SpmEncode(vocab_, ReplaceAll(buf, " ", kSpaceMarker), &out);
      prev_special = false;
    }
  } else {
    for (const Fragment& f : frags) {
      if (f.token != kNoToken) {
        out.push_back(f.token);
      } else {
        bpe_->Encode(text.substr(f.begin, f.end - f.begin), &out);
      }
    }
  }
  if (add_eos) out.push_back(vocab_.eos);
  return out;
}

std::string_view Tokenizer::TokenToPiece(TokenId id, bool render_special) const {
  if (!vocab_.Valid(id)) return {};
  if (!render_special && (vocab_.attrs[id] & (kAttrControl | kAttrUnknown))) return {};
  return pieces_[id];
}

StatusOr<std::string> Tokenizer::Decode(std::span<const TokenId> ids,
                                        const DecodeOptions& options) const {
  for (TokenId id : ids) {
    if (!vocab_.Valid(id)) {
      return InvalidArgumentError(
          StrFormat("token id %d is outside the vocabulary [0, %d)", id, vocab_.size()));
    }
  }
  bool remove_space = vocab_.add_space_prefix;
  if (options.remove_special && vocab_.add_bos && !ids.empty() && ids.front() == vocab_.bos) {
    remove_space = false;  // llama.cpp keeps the space after a removed BOS
    ids = ids.subspan(1);
  }
  if (options.remove_special && vocab_.add_eos && !ids.empty() && ids.back() == vocab_.eos) {
    ids = ids.subspan(0, ids.size() - 1);
  }
  std::string out;
  for (TokenId id : ids) {
    std::string_view piece = TokenToPiece(id, options.render_special);
    if (remove_space && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    remove_space = false;
    out.append(piece);
  }
  return out;
}

Status Tokenizer::CheckFitsModel(int64_t model_rows) const {
  if (n_tokens() <= model_rows) return OkStatus();
  return InvalidArgumentError(
      StrFormat("the vocabulary has %d tokens but the model only %lld",
                n_tokens(), static_cast<long long>(model_rows)));
}

}  // namespace weft::tokenizer
