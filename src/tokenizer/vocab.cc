#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "gguf/gguf.h"
#include "tokenizer/unicode.h"
#include "util/strings.h"

namespace weft::tokenizer {

namespace {

constexpr const char* kKeyModel = "tokenizer.ggml.model";
constexpr const char* kKeyPre = "tokenizer.ggml.pre";
constexpr const char* kKeyTokens = "tokenizer.ggml.tokens";
constexpr const char* kKeyScores = "tokenizer.ggml.scores";
constexpr const char* kKeyTypes = "tokenizer.ggml.token_type";
constexpr const char* kKeyMerges = "tokenizer.ggml.merges";

bool IsLlama3Pre(std::string_view pre) {
  for (std::string_view p : {"llama3", "llama-v3", "llama-bpe", "falcon3",
                             "falcon-h1", "pixtral", "midm-2.0", "lfm2"}) {
    if (pre == p) return true;
  }
  return false;
}

// Pre-tokenizers whose detokenizer does not clean up spaces (llama.cpp).
bool PreKeepsSpaces(std::string_view pre) {
  for (std::string_view p :
       {"deepseek-llm", "deepseek-coder", "deepseek-v3", "qwen2",
        "deepseek-r1-qwen", "command-r", "poro-chat", "viking"}) {
    if (pre == p) return true;
  }
  return false;
}

// Reads an optional bool key into *out; a missing key leaves it unchanged.
Status ReadBool(const gguf::GgufFile& f, const char* key, bool* out) {
  if (!f.Has(key)) return OkStatus();
  ASSIGN_OR_RETURN(*out, f.GetBool(key));
  return OkStatus();
}

// Reads an optional token id key; values outside the vocab keep the default
// (llama.cpp: "bad special token ... using default id").
void ReadId(const gguf::GgufFile& f, const char* key, int32_t n_tokens,
            TokenId* out) {
  if (*out >= n_tokens) *out = kNoToken;
  if (!f.Has(key)) return;
  StatusOr<uint32_t> v = f.GetUint32(key);
  if (v.ok() && *v < static_cast<uint32_t>(n_tokens)) {
    *out = static_cast<TokenId>(*v);
  }
}

}  // namespace

uint32_t AttrFromTokenType(int32_t type) {
  switch (static_cast<TokenType>(type)) {
    case TokenType::kNormal: return kAttrNormal;
    case TokenType::kUnknown: return kAttrUnknown;
    case TokenType::kControl: return kAttrControl;
    case TokenType::kUserDefined: return kAttrUserDefined;
    case TokenType::kUnused: return kAttrUnused;
    case TokenType::kByte: return kAttrByte;
    default: return kAttrUndefined;
  }
}

uint64_t HashText(std::string_view s) {
  // 8 bytes at a time with a multiply-xorshift mix (wyhash-like).
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull;
  uint64_t h = 0x243F6A8885A308D3ull ^ (s.size() * kMul);
  const char* p = s.data();
  size_t n = s.size();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * kMul;
    h ^= h >> 29;
    p += 8;
    n -= 8;
  }
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  h = (h ^ w) * kMul;
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  h ^= h >> 32;
  return h;
}

TokenId TokenIndex::Build(const std::vector<std::string>& tokens) {
  size_t cap = 16;
  while (cap < tokens.size() * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  size_ = 0;
  const size_t mask = cap - 1;
  for (size_t id = 0; id < tokens.size(); ++id) {
    const uint64_t h = HashText(tokens[id]);
    size_t i = h & mask;
    while (slots_[i].id != kNoToken) {
      if (slots_[i].hash == static_cast<uint32_t>(h >> 32) &&
          tokens[slots_[i].id] == tokens[id]) {
        return static_cast<TokenId>(id);
      }
      i = (i + 1) & mask;
    }
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), static_cast<TokenId>(id)};
    ++size_;
  }
  return kNoToken;
}

TokenId TokenIndex::Find(const std::vector<std::string>& tokens,
                         std::string_view text) const {
  if (slots_.empty()) return kNoToken;
  const uint64_t h = HashText(text);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& slot = slots_[i];
    if (slot.id == kNoToken) return kNoToken;
    if (slot.hash == static_cast<uint32_t>(h >> 32) && tokens[slot.id] == text) {
      return slot.id;
    }
  }
}

bool Vocab::IsEog(TokenId id) const {
  return id != kNoToken && std::binary_search(eog_ids.begin(), eog_ids.end(), id);
}

Status FinalizeVocab(Vocab* v) {
  const size_t n = v->tokens.size();
  if (n == 0) return InvalidArgumentError("vocabulary has no tokens");
  if (n > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgumentError("vocabulary too large");
  }
  if (v->scores.empty()) v->scores.assign(n, 0.0f);
  if (v->attrs.empty()) v->attrs.assign(n, kAttrNormal);
  if (v->scores.size() != n || v->attrs.size() != n) {
    return InvalidArgumentError(StrFormat(
        "vocabulary arrays disagree: %zu tokens, %zu scores, %zu types", n,
        v->scores.size(), v->attrs.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (v->tokens[i].empty()) v->tokens[i] = StrFormat("[EMPTY_%zu]", i);
  }
  if (TokenId dup = v->index.Build(v->tokens); dup != kNoToken) {
    return InvalidArgumentError(
        StrFormat("duplicate token in vocabulary: '%s' (id %d)",
                  CEscape(v->tokens[dup]).c_str(), dup));
  }
  for (TokenId* id : {&v->bos, &v->eos, &v->eot, &v->eom, &v->unk, &v->sep,
                      &v->pad, &v->mask}) {
    if (*id != kNoToken && !v->Valid(*id)) {
      return InvalidArgumentError(StrFormat("special token id %d out of range", *id));
    }
  }
  for (TokenId id : v->eog_ids) {
    if (!v->Valid(id)) return InvalidArgumentError("eog token id out of range");
  }
  std::sort(v->eog_ids.begin(), v->eog_ids.end());
  v->eog_ids.erase(std::unique(v->eog_ids.begin(), v->eog_ids.end()),
                   v->eog_ids.end());
  v->byte_tokens.assign(256, kNoToken);
  for (int b = 0; b < 256; ++b) {
    if (v->kind == VocabKind::kLlama) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
      v->byte_tokens[b] = v->Find(buf);
    } else {
      v->byte_tokens[b] = v->Find(ByteToUnicode(static_cast<uint8_t>(b)));
    }
  }
  return OkStatus();
}

namespace {

// The tokenizer model's kind and its defaults (special ids, BOS, spaces),
// before the GGUF keys override them.
Status SetModelDefaults(const gguf::GgufFile& f, Vocab* v) {
  if (v->model == "llama") {
    v->kind = VocabKind::kLlama;
    v->bos = 1;
    v->eos = 2;
    v->unk = 0;
    v->add_space_prefix = true;
    v->add_bos = true;
  } else if (v->model == "gpt2") {
    v->kind = VocabKind::kGpt2;
    v->bos = 11;
    v->eos = 11;
    v->clean_spaces = !PreKeepsSpaces(v->pre);
    if (IsLlama3Pre(v->pre)) {
      v->ignore_merges = true;
      v->add_bos = true;
    }
  } else {
    return UnimplementedError(
        StrFormat("%s: unsupported tokenizer model '%s' (supported: llama, gpt2)",
                  f.path().c_str(), CEscape(v->model).c_str()));
  }
  return OkStatus();
}

// Tokens (read straight from the parsed array, one copy per string), their
// scores and types, and a BPE vocabulary's merges.
Status ReadTokens(const gguf::GgufFile& f, Vocab* v) {
  const gguf::Value* tokens = f.Find(kKeyTokens);
  if (tokens == nullptr) {
    return NotFoundError(StrFormat("%s: no %s", f.path().c_str(), kKeyTokens));
  }
  if (tokens->type() != gguf::ValueType::kArray ||
      tokens->array().elem_type != gguf::ValueType::kString) {
    return InvalidArgumentError(
        StrFormat("%s: %s is not an array of strings", f.path().c_str(), kKeyTokens));
  }
  const auto& items = tokens->array().items;
  const size_t n = items.size();
  v->tokens.reserve(n);
  for (const gguf::Value& item : items) v->tokens.push_back(item.str());

  if (f.Has(kKeyScores)) {
    StatusOr<std::vector<float>> scores = f.GetFloat32Array(kKeyScores);
    if (!scores.ok()) {
      // llama.cpp also accepts int32 scores; the error names float32.
      StatusOr<std::vector<int32_t>> iscores = f.GetInt32Array(kKeyScores);
      if (!iscores.ok()) return scores.status();
      scores = std::vector<float>(iscores->begin(), iscores->end());
    }
    if (scores->size() < n) {
      return InvalidArgumentError(StrFormat("%s: %zu scores for %zu tokens",
                                            f.path().c_str(), scores->size(), n));
    }
    v->scores.assign(scores->begin(), scores->begin() + n);
  }
  if (f.Has(kKeyTypes)) {
    ASSIGN_OR_RETURN(std::vector<int32_t> types, f.GetInt32Array(kKeyTypes));
    if (types.size() < n) {
      return InvalidArgumentError(StrFormat("%s: %zu token types for %zu tokens",
                                            f.path().c_str(), types.size(), n));
    }
    v->attrs.resize(n);
    for (size_t i = 0; i < n; ++i) v->attrs[i] = AttrFromTokenType(types[i]);
  }
  if (v->kind == VocabKind::kGpt2) {
    ASSIGN_OR_RETURN(std::vector<std::string> merges, f.GetStringArray(kKeyMerges));
    v->merges.reserve(merges.size());
    for (std::string& m : merges) {
      const size_t pos = m.find(' ', 1);
      if (pos == std::string::npos) {
        v->merges.emplace_back();  // keeps the ranks of later merges
      } else {
        v->merges.emplace_back(m.substr(0, pos), m.substr(pos + 1));
      }
    }
  }
  return OkStatus();
}

// The special token ids and add_{bos,eos,sep}_token from the GGUF keys.
Status ReadSpecialTokens(const gguf::GgufFile& f, Vocab* v) {
  const int32_t n_tokens =
      static_cast<int32_t>(std::min<size_t>(v->tokens.size(), INT32_MAX));
  ReadId(f, "tokenizer.ggml.bos_token_id", n_tokens, &v->bos);
  ReadId(f, "tokenizer.ggml.eos_token_id", n_tokens, &v->eos);
  ReadId(f, "tokenizer.ggml.eot_token_id", n_tokens, &v->eot);
  ReadId(f, "tokenizer.ggml.eom_token_id", n_tokens, &v->eom);
  ReadId(f, "tokenizer.ggml.unknown_token_id", n_tokens, &v->unk);
  ReadId(f, "tokenizer.ggml.seperator_token_id", n_tokens, &v->sep);
  ReadId(f, "tokenizer.ggml.padding_token_id", n_tokens, &v->pad);
  ReadId(f, "tokenizer.ggml.mask_token_id", n_tokens, &v->mask);
  RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_bos_token", &v->add_bos));
  RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_eos_token", &v->add_eos));
  RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_sep_token", &v->add_sep));
  if (v->add_bos && v->bos == kNoToken) {
    return InvalidArgumentError(StrFormat("%s: add_bos_token is set but there is no bos token", f.path().c_str()));
  }
  if (v->add_eos && v->eos == kNoToken) {
    return InvalidArgumentError(StrFormat("%s: add_eos_token is set but there is no eos token", f.path().c_str()));
  }
  return OkStatus();
}

// Auto-detect end-of-turn / end-of-generation tokens by text, as llama.cpp
// does (the GGUF keys are often missing). Ids ascending, first one wins.
void DetectEndOfGeneration(Vocab* v) {
  static constexpr std::string_view kEot[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
      "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<end_of_utterance>",
      "<｜end▁of▁sentence｜>"};
  static constexpr std::string_view kEog[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>",
      "<|flush|>", "<|calls|>", "<end_of_turn>", "<|endoftext|>", "</s>",
      "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
      "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
      "<｜end▁of▁sentence｜>"};
  for (std::string_view text : kEot) {
    if (v->eot != kNoToken) break;
    TokenId id = v->Find(text);
    if (id != kNoToken) v->eot = id;
  }
  if (v->eom == kNoToken) v->eom = v->Find("<|eom_id|>");
  for (TokenId id : {v->eot, v->eom}) {
    if (id != kNoToken) v->attrs[id] |= kAttrControl;  // control-looking tokens
  }
  for (std::string_view text : kEog) {
    TokenId id = v->Find(text);
    if (id == kNoToken) continue;
    v->eog_ids.push_back(id);
    v->attrs[id] |= kAttrControl;
  }
  for (TokenId id : {v->eos, v->eot, v->eom}) {
    if (id != kNoToken) v->eog_ids.push_back(id);
  }
  std::sort(v->eog_ids.begin(), v->eog_ids.end());
  v->eog_ids.erase(std::unique(v->eog_ids.begin(), v->eog_ids.end()), v->eog_ids.end());
  // llama.cpp's workarounds: with <|return|> and <|call|> (gpt-oss) or
  // <|calls|> and <|flush|> (solar-open), <|end|> is a plain user-defined
  // token; with <|tool_response>, </s> is a normal token.
  const auto has_eog = [&](std::string_view text) {
    const TokenId id = v->Find(text);
    return id != kNoToken && v->IsEog(id);
  };
  const auto drop_eog = [&](std::string_view text, uint32_t attr) {
    const TokenId id = v->Find(text);
    v->eog_ids.erase(std::remove(v->eog_ids.begin(), v->eog_ids.end(), id), v->eog_ids.end());
    v->attrs[id] = attr;
  };
  if (has_eog("<|end|>") && ((has_eog("<|return|>") && has_eog("<|call|>")) ||
                             (has_eog("<|calls|>") && has_eog("<|flush|>")))) {
    drop_eog("<|end|>", kAttrUserDefined);
  }
  if (has_eog("</s>") && has_eog("<|tool_response>")) drop_eog("</s>", kAttrNormal);
  for (size_t i = 0; i < v->tokens.size(); ++i) {
    if ((v->attrs[i] & kAttrControl) &&
        v->tokens[i].find("unused") != std::string::npos) {
      v->attrs[i] |= kAttrUnused;
    }
  }
}

}  // namespace

StatusOr<Vocab> LoadVocab(const gguf::GgufFile& f) {
  Vocab v;
  ASSIGN_OR_RETURN(v.model, f.GetString(kKeyModel));
  if (f.Has(kKeyPre)) {
    ASSIGN_OR_RETURN(v.pre, f.GetString(kKeyPre));
  }
  RETURN_IF_ERROR(SetModelDefaults(f, &v));
  RETURN_IF_ERROR(ReadBool(f, "tokenizer.ggml.add_space_prefix", &v.add_space_prefix));
  RETURN_IF_ERROR(ReadTokens(f, &v));
  RETURN_IF_ERROR(ReadSpecialTokens(f, &v));
  Status st = FinalizeVocab(&v);
  if (!st.ok()) return Status(st.code(), f.path() + ": " + st.message());
  DetectEndOfGeneration(&v);
  return v;
}

}  // namespace weft::tokenizer
