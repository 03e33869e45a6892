#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenize.h"

#include <pcre2.h>

#include "util/strings.h"

namespace weft::tokenizer {

namespace {

// Patterns from llama.cpp's llm_tokenizer_bpe (case-insensitive contractions
// spelled out as character classes).
constexpr const char* kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char* kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char* kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|"
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

bool In(std::string_view s, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names) {
    if (s == n) return true;
  }
  return false;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

PreTokenizer::~PreTokenizer() = default;

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(std::string_view pre) {
  std::vector<std::string> patterns;
  if (pre.empty() || pre == "default") {
    patterns = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"};
  } else if (In(pre, {"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1",
                      "pixtral", "midm-2.0", "lfm2", "dbrx", "smaug-bpe",
                      "glm4", "chatglm-bpe"})) {
    patterns = {kLlama3};
  } else if (In(pre, {"qwen2", "deepseek-r1-qwen", "stablelm2", "hunyuan"})) {
    patterns = {kQwen2};
  } else if (In(pre, {"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
                      "jina-v2-es", "jina-v2-de", "jina-v1-en", "jina-v2-code",
                      "roberta-bpe", "mpt", "olmo", "jais", "trillion"})) {
    patterns = {kGpt2};
  } else if (In(pre, {"starcoder", "refact", "command-r", "smollm", "codeshell",
                      "exaone", "minerva"})) {
    patterns = {"\\p{N}", kGpt2};
  } else if (pre == "falcon") {
    patterns = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"};
  } else {
    return UnimplementedError(StrFormat("unsupported pre-tokenizer '%s'",
                                        CEscape(pre).c_str()));
  }
  return FromPatterns(patterns);
}

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::FromPatterns(
    const std::vector<std::string>& patterns) {
  std::unique_ptr<PreTokenizer> p(new PreTokenizer());
  for (const std::string& pattern : patterns) {
    int err = 0;
    PCRE2_SIZE err_off = 0;
    auto re = std::make_unique<Regex>();
    re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()),
                             pattern.size(), PCRE2_UTF | PCRE2_UCP, &err,
                             &err_off, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return InvalidArgumentError(StrFormat("bad pre-tokenizer regex at %zu: %s",
                                            static_cast<size_t>(err_off),
                                            reinterpret_cast<char*>(msg)));
    }
    // JIT is an optimisation only; the interpreter is used when it fails.
    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    p->regexes_.push_back(std::move(re));
  }
  return p;
}

PreTokenizer::Ranges PreTokenizer::Split(std::string_view text) const {
  Ranges ranges;
  if (text.empty()) return ranges;
  ranges.emplace_back(0, static_cast<uint32_t>(text.size()));
  Ranges next;
  for (const auto& re : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    next.clear();
    next.reserve(ranges.size() * 2);
    for (const auto& [begin, end] : ranges) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() + begin);
      const PCRE2_SIZE len = end - begin;
      PCRE2_SIZE pos = 0;   // search start
      PCRE2_SIZE last = 0;  // end of the last emitted piece
      while (pos < len) {
        const int rc = pcre2_match(re->code, subject, len, pos, PCRE2_NO_UTF_CHECK,
                                   md, nullptr);
        if (rc < 0) break;  // no match (or a resource limit): rest is a gap
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const PCRE2_SIZE ms = ov[0], me = ov[1];
        if (me <= ms) {  // empty match: step over one character
          pos = ms + 1;
          while (pos < len && (subject[pos] & 0xC0) == 0x80) ++pos;
          continue;
        }
        if (ms > last) next.emplace_back(begin + last, begin + ms);
        next.emplace_back(begin + ms, begin + me);
        last = pos = me;
      }
      if (last < len) next.emplace_back(begin + last, end);
    }
    pcre2_match_data_free(md);
    ranges.swap(next);
  }
  return ranges;
}

}  // namespace weft::tokenizer
