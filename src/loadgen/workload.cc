#include "loadgen/workload.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>

#include "util/enum_name.h"
#include "util/strings.h"

namespace weft::loadgen {

namespace {

using json = nlohmann::json;

constexpr const char* kWords[] = {
    "the",     "of",     "and",    "to",      "in",      "a",       "is",
    "that",    "for",    "it",     "as",      "was",     "with",    "be",
    "by",      "on",     "not",    "he",      "this",    "are",     "or",
    "his",     "from",   "at",     "which",   "but",     "have",    "an",
    "had",     "they",   "you",    "were",    "their",   "one",     "all",
    "we",      "can",    "her",    "has",     "there",   "been",    "if",
    "more",    "when",   "will",   "would",   "who",     "so",      "no",
    "river",   "garden", "window", "morning", "story",   "little",  "house",
    "friend",  "water",  "light",  "small",   "green",   "found",   "under",
    "mountain", "quiet", "bright", "evening", "market",  "letter",  "winter",
    "children", "forest", "people", "number", "system",  "between", "another",
    "through", "because", "before", "always", "together", "question", "answer",
    "machine", "language", "memory", "reason", "careful", "simple",  "several",
    "village", "journey", "weather", "picture", "kitchen", "animal", "ocean"};
constexpr int kNumWords = sizeof(kWords) / sizeof(kWords[0]);

std::string Join(const std::string& base, std::span<const std::string> words,
                 size_t k) {
  std::string s = base;
  for (size_t i = 0; i < k; ++i) {
    if (!s.empty() && s.back() != ' ' && s.back() != '\n') s.push_back(' ');
    s += words[i];
  }
  return s;
}

int64_t MaxPromptTokens(const WorkloadParams& p) {
  switch (p.kind) {
    case WorkloadKind::kS1:
    case WorkloadKind::kS5:
    case WorkloadKind::kS6:
      return p.prompt_tokens;
    case WorkloadKind::kS2:
      return std::max(p.prompt_tokens, p.long_prompt_tokens);
    case WorkloadKind::kS3:
      return p.prompt_max;
    case WorkloadKind::kS4:
      return p.system_tokens + p.prompt_tokens;
    case WorkloadKind::kFile:
      return 0;
  }
  return 0;
}

// Cuts exact-length prompts out of the tokenized (or word) corpus.
class PromptMaker {
 public:
  PromptMaker(TokenizerClient* tok, bool text, uint64_t seed)
      : tok_(tok), text_(text), rng_(seed) {}

  Status Init(int64_t max_tokens, uint64_t seed) {
    words_ = CorpusWords(seed, 2 * max_tokens + 256);
    if (text_) return OkStatus();
    ASSIGN_OR_RETURN(specials_, tok_->Tokenize(""));
    ASSIGN_OR_RETURN(std::vector<int32_t> all, tok_->Tokenize(Join("", words_, words_.size())));
    size_t skip = 0;
    if (all.size() >= specials_.size() &&
        std::equal(specials_.begin(), specials_.end(), all.begin())) {
      skip = specials_.size();
    }
    body_.assign(all.begin() + static_cast<std::ptrdiff_t>(skip), all.end());
    if (static_cast<int64_t>(body_.size()) < max_tokens) {
      return InternalError(StrFormat(
          "the corpus has only %zu tokens; %lld needed", body_.size(),
          (long long)max_tokens));
    }
    return OkStatus();
  }

  int64_t Uniform(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  std::mt19937_64& rng() { return rng_; }

  // A prompt of exactly n tokens (specials included).
  StatusOr<Prompt> Make(int64_t n) {
    Prompt p;
    p.tokens = n;
    if (!text_) {
      const int64_t sp = static_cast<int64_t>(specials_.size());
      if (n <= sp) {
        return InvalidArgumentError(StrFormat("a prompt of %lld tokens is too short", (long long)n));
      }
      const int64_t len = n - sp;
      const int64_t off = Uniform(0, static_cast<int64_t>(body_.size()) - len);
      p.ids = specials_;
      p.ids.insert(p.ids.end(), body_.begin() + off, body_.begin() + off + len);
      return p;
    }
    ASSIGN_OR_RETURN(p.text, FitText(Counter(), "", WordsFrom(n), n));
    return p;
  }

  // S5's edit request: a text passage of exactly n tokens and the request
  // to copy it with one of its words replaced (text prompts in every mode:
  // the instruction is words, not corpus ids).
  StatusOr<Prompt> MakeEdit(int64_t n) {
    ASSIGN_OR_RETURN(std::string passage, FitText(Counter(), "", WordsFrom(n), n));
    // A word of the passage to replace, and its replacement.
    std::vector<std::string_view> words;
    for (std::string_view w : StrSplit(passage, ' ')) {
      if (w.size() >= 4 && std::isalpha(static_cast<unsigned char>(w.back()))) {
        words.push_back(w);
      }
    }
    const std::string from = words.empty() ? "the" : std::string(words[size_t(
        Uniform(0, static_cast<int64_t>(words.size()) - 1))]);
    std::string to = kWords[Uniform(0, kNumWords - 1)];
    if (to == from) to = "lantern";
    Prompt p;
    p.text = "Here is a passage:\n\n" + passage +
             "\n\nRepeat the passage word for word, but replace every \"" + from +
             "\" with \"" + to + "\". Write only the new passage.\n\n";
    ASSIGN_OR_RETURN(p.tokens, Counter()(p.text));
    return p;
  }

  // `prefix` followed by `extra` more tokens.
  StatusOr<Prompt> Extend(const Prompt& prefix, int64_t extra) {
    Prompt p;
    p.tokens = prefix.tokens + extra;
    if (!text_) {
      const int64_t off = Uniform(0, static_cast<int64_t>(body_.size()) - extra);
      p.ids = prefix.ids;
      p.ids.insert(p.ids.end(), body_.begin() + off, body_.begin() + off + extra);
      return p;
    }
    ASSIGN_OR_RETURN(p.text, FitText(Counter(), prefix.text + "\n",
                                     WordsFrom(extra), p.tokens));
    return p;
  }

 private:
  TokenCounter Counter() {
    return [this](const std::string& s) -> StatusOr<int64_t> {
      ASSIGN_OR_RETURN(std::vector<int32_t> ids, tok_->Tokenize(s));
      return static_cast<int64_t>(ids.size());
    };
  }
  // Words starting at a random place, enough for n tokens.
  std::span<const std::string> WordsFrom(int64_t n) {
    const int64_t need = std::min<int64_t>(n + 8, words_.size());
    const int64_t off = Uniform(0, static_cast<int64_t>(words_.size()) - need);
    return std::span<const std::string>(words_).subspan(off);
  }

  TokenizerClient* tok_;
  bool text_;
  std::mt19937_64 rng_;
  std::vector<std::string> words_;
  std::vector<int32_t> specials_;  // what an empty text tokenizes to (BOS)
  std::vector<int32_t> body_;      // corpus ids without the specials
};

}  // namespace

const char* WorkloadName(WorkloadKind k) {
  static constexpr const char* kNames[] = {"S1", "S2", "S3", "S4",
                                           "S5", "S6", "file"};
  return EnumName<WorkloadKind::kFile>(k, kNames, "?");
}

WorkloadParams DefaultParams(WorkloadKind kind) {
  WorkloadParams p;
  p.kind = kind;
  switch (kind) {
    case WorkloadKind::kS2:
      p.prompt_tokens = 64;
      p.output_tokens = 512;
      break;
    case WorkloadKind::kS4:
      p.prompt_tokens = 32;
      p.output_tokens = 32;
      break;
    case WorkloadKind::kS5:
      p.prompt_tokens = 300;
      p.output_tokens = 320;
      break;
    case WorkloadKind::kS6:
      p.prompt_tokens = 1500;
      p.output_tokens = 256;
      break;
    default:
      break;
  }
  return p;
}

std::vector<std::string> CorpusWords(uint64_t seed, int64_t n) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + 17);
  std::uniform_int_distribution<int> pick(0, kNumWords - 1);
  std::uniform_int_distribution<int> punct(0, 11);
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i) {
    std::string w = kWords[pick(rng)];
    int r = punct(rng);
    if (r == 0) w += ".";
    if (r == 1) w += ",";
    out.push_back(std::move(w));
  }
  return out;
}

StatusOr<std::string> FitText(const TokenCounter& count,
                              const std::string& base,
                              std::span<const std::string> words,
                              int64_t target) {
  ASSIGN_OR_RETURN(int64_t c0, count(base));
  if (c0 > target) {
    return InvalidArgumentError(StrFormat(
        "cannot fit %lld tokens: the fixed part already has %lld",
        (long long)target, (long long)c0));
  }
  // Largest k with count(base + k words) <= target. Every word is at least
  // one token, so k <= target words (searched over all when that fails).
  size_t hi = std::min(words.size(), static_cast<size_t>(target) + 1);
  ASSIGN_OR_RETURN(int64_t chi, count(Join(base, words, hi)));
  if (chi < target && hi < words.size()) {
    hi = words.size();
    ASSIGN_OR_RETURN(chi, count(Join(base, words, hi)));
  }
  if (chi < target) {
    return InternalError(StrFormat("the corpus is too short for %lld tokens",
                                   (long long)target));
  }
  size_t lo = 0;
  while (lo < hi) {
    size_t mid = (lo + hi + 1) / 2;
    ASSIGN_OR_RETURN(int64_t c, count(Join(base, words, mid)));
    if (c <= target) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  std::string text = Join(base, words, lo);
  ASSIGN_OR_RETURN(int64_t c, count(text));
  // Pad with short pieces that add a token or two without overshooting.
  static const char* kPads[] = {" the", " a", " I", ".", ",", "a", " "};
  for (int guard = 0; c < target && guard < 4 * target + 16; ++guard) {
    bool progressed = false;
    for (const char* pad : kPads) {
      ASSIGN_OR_RETURN(int64_t cp, count(text + pad));
      if (cp > c && cp <= target) {
        text += pad;
        c = cp;
        progressed = true;
        break;
      }
    }
    if (!progressed) break;
  }
  if (c != target) {
    return InternalError(StrFormat(
        "could not fit a text to exactly %lld tokens (got %lld)",
        (long long)target, (long long)c));
  }
  return text;
}

StatusOr<WorkloadPlan> BuildWorkload(const WorkloadParams& p,
                                     TokenizerClient* tokenizer, int64_t pool,
                                     bool text_prompts) {
  WorkloadPlan plan;
  if (p.kind == WorkloadKind::kFile) {
    return InvalidArgumentError("prompt files are loaded with ParsePromptFile");
  }
  pool = std::max<int64_t>(pool, 1);
  PromptMaker maker(tokenizer, text_prompts, p.seed);
  RETURN_IF_ERROR(maker.Init(MaxPromptTokens(p), p.seed));
  auto add = [&](std::vector<PlannedRequest>* to, StatusOr<Prompt> prompt,
                 int64_t max_tokens, const char* group) -> Status {
    if (!prompt.ok()) return prompt.status();
    to->push_back({std::move(*prompt), max_tokens, group});
    return OkStatus();
  };
  switch (p.kind) {
    case WorkloadKind::kS1:
    case WorkloadKind::kS6:
      for (int64_t i = 0; i < pool; ++i) {
        RETURN_IF_ERROR(add(&plan.requests, maker.Make(p.prompt_tokens),
                            p.output_tokens, ""));
      }
      break;
    case WorkloadKind::kS2:
      for (int64_t i = 0; i < pool; ++i) {
        RETURN_IF_ERROR(add(&plan.requests, maker.Make(p.prompt_tokens),
                            p.output_tokens, "background"));
      }
      for (int64_t i = 0; i < p.long_count; ++i) {
        RETURN_IF_ERROR(add(&plan.long_requests,
                            maker.Make(p.long_prompt_tokens),
                            p.long_output_tokens, "long"));
      }
      break;
    case WorkloadKind::kS3: {
      if (p.prompt_min < 1 || p.prompt_max < p.prompt_min ||
          p.output_min < 1 || p.output_max < p.output_min) {
        return InvalidArgumentError("bad S3 length ranges");
      }
      std::uniform_real_distribution<double> logu(
          std::log(static_cast<double>(p.prompt_min)),
          std::log(static_cast<double>(p.prompt_max)));
      for (int64_t i = 0; i < pool; ++i) {
        int64_t len = std::clamp<int64_t>(
            std::llround(std::exp(logu(maker.rng()))), p.prompt_min,
            p.prompt_max);
        int64_t out = maker.Uniform(p.output_min, p.output_max);
        RETURN_IF_ERROR(add(&plan.requests, maker.Make(len), out, ""));
      }
      break;
    }
    case WorkloadKind::kS5:
      for (int64_t i = 0; i < pool; ++i) {
        RETURN_IF_ERROR(add(&plan.requests, maker.MakeEdit(p.prompt_tokens),
                            p.output_tokens, ""));
      }
      break;
    case WorkloadKind::kS4: {
      std::vector<Prompt> systems;
      for (int64_t i = 0; i < p.system_prompts; ++i) {
        ASSIGN_OR_RETURN(Prompt s, maker.Make(p.system_tokens));
        systems.push_back(std::move(s));
      }
      if (systems.empty()) return InvalidArgumentError("S4 needs system prompts");
      for (int64_t i = 0; i < p.shared_requests; ++i) {
        const Prompt& sys = systems[static_cast<size_t>(i) % systems.size()];
        RETURN_IF_ERROR(add(&plan.requests, maker.Extend(sys, p.prompt_tokens),
                            p.output_tokens, ""));
      }
      std::shuffle(plan.requests.begin(), plan.requests.end(), maker.rng());
      break;
    }
    case WorkloadKind::kFile:
      break;
  }
  return plan;
}

StatusOr<std::vector<PlannedRequest>> ParsePromptFile(
    std::string_view content, int64_t default_max_tokens) {
  std::vector<PlannedRequest> out;
  int line_no = 0;
  for (std::string_view line : StrSplit(content, '\n')) {
    ++line_no;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
      line.remove_suffix(1);
    }
    if (line.empty() || line[0] == '#') continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      return InvalidArgumentError(StrFormat("line %d: not a JSON object", line_no));
    }
    PlannedRequest r;
    r.max_tokens = default_max_tokens;
    auto p = j.find("prompt");
    if (p != j.end() && p->is_string()) {
      r.prompt.text = p->get<std::string>();
    } else if (p != j.end() && p->is_array() && !p->empty()) {
      for (const json& id : *p) {
        if (!id.is_number_integer()) {
          return InvalidArgumentError(StrFormat("line %d: 'prompt' ids must be integers", line_no));
        }
        r.prompt.ids.push_back(id.get<int32_t>());
      }
      r.prompt.tokens = static_cast<int64_t>(r.prompt.ids.size());
    } else {
      return InvalidArgumentError(StrFormat(
          "line %d: 'prompt' must be a string or a list of token ids", line_no));
    }
    if (r.prompt.text.empty() && r.prompt.ids.empty()) {
      return InvalidArgumentError(StrFormat("line %d: empty prompt", line_no));
    }
    for (const char* key : {"max_tokens", "output_len"}) {
      auto m = j.find(key);
      if (m == j.end()) continue;
      if (!m->is_number_integer() || m->get<int64_t>() < 1) {
        return InvalidArgumentError(StrFormat("line %d: '%s' must be a positive integer", line_no, key));
      }
      r.max_tokens = m->get<int64_t>();
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return InvalidArgumentError("the prompt file has no prompts");
  return out;
}

}  // namespace weft::loadgen
