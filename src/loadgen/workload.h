// The serving workloads of docs/benchmarks (S1-S6) and JSONL prompt files,
// turned into concrete requests whose prompt lengths are exact in the
// target's own tokens.
//
// Prompts are cut from a seeded pseudo-random word corpus. In token-id mode
// (the default for completions) the corpus is tokenized once through the
// target's /tokenize and each prompt is the special prefix (BOS) plus a
// slice of the corpus ids, so its length is exact by construction. In text
// mode (chat, or --prompt-text) each prompt's text is fitted word by word
// with /tokenize until its count is exact (FitText).
//
// Thread safety: functions are reentrant; a TokenizerClient is used from
// one thread at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "util/status.h"

namespace weft::loadgen {

enum class WorkloadKind { kS1, kS2, kS3, kS4, kS5, kS6, kFile };
// "S1".."S6" or "file".
const char* WorkloadName(WorkloadKind k);

// Every knob of the workloads; DefaultParams() fills in the guide's values.
struct WorkloadParams {
  WorkloadKind kind = WorkloadKind::kS1;  // which workload
  std::string file;                       // kFile: JSONL prompt file
  uint64_t seed = 0;                      // corpus and sampling seed
  int64_t prompt_tokens = 256;   // S1 / S6 prompt; S2 background prompt; S4 user
                                 // turn; S5 the passage to copy
  int64_t output_tokens = 128;   // S1, S6, S2 background, S4 max_tokens
  int64_t prompt_min = 32;       // S3: log-uniform prompt length bounds
  int64_t prompt_max = 1024;
  int64_t output_min = 16;       // S3: uniform output length bounds
  int64_t output_max = 256;
  int64_t background_streams = 8;   // S2: closed-loop streams
  int64_t long_prompt_tokens = 2048;  // S2: the long prompt
  int64_t long_output_tokens = 16;  // S2: max_tokens of a long request
  double long_every_s = 10;         // S2: a long request every this many s
  int64_t long_count = 3;           // S2: long requests per run
  int64_t system_prompts = 4;       // S4: distinct shared prefixes
  int64_t system_tokens = 1024;     // S4: tokens of each prefix
  int64_t shared_requests = 64;     // S4: requests per run
};
// The guide's parameters for a workload (S1 256/128, S2 64/512 with
// 2048-token arrivals, S3 32..1024 / 16..256, S4 4x1024 + 32, output 32,
// S5 a 300-token passage to copy with one word replaced, output 320 (an
// edit: the answer mostly copies the prompt; without ignore_eos),
// S6 1500/256: S1's closed loop over long distinct prompts).
WorkloadParams DefaultParams(WorkloadKind kind);

// One prompt. Exactly one of ids / text is used by the request.
struct Prompt {
  std::vector<int32_t> ids;  // token-id prompt; empty = use text
  std::string text;          // text prompt (chat: the user message)
  std::string system;        // chat: a system message (S4 text mode)
  int64_t tokens = 0;        // planned length in the target's tokens
};

struct PlannedRequest {
  Prompt prompt;
  int64_t max_tokens = 16;  // requested output tokens
  std::string group;        // "" or the workload role ("background", "long")
};

// The requests of one run: `requests` are cycled (request i uses
// requests[i % size]); S2's long arrivals are separate.
struct WorkloadPlan {
  std::vector<PlannedRequest> requests;
  std::vector<PlannedRequest> long_requests;  // S2 only
};

// Tokenizes text like the target's completions route does (with BOS).
class TokenizerClient {
 public:
  virtual ~TokenizerClient() = default;
  virtual StatusOr<std::vector<int32_t>> Tokenize(const std::string& text) = 0;
};

// Counts the tokens of a text.
using TokenCounter = std::function<StatusOr<int64_t>(const std::string&)>;

// Returns base + words (space-joined, from the start of `words`) + small
// pads, whose token count is exactly `target`. Fails when `words` is too
// short or no pad reaches the target.
StatusOr<std::string> FitText(const TokenCounter& count,
                              const std::string& base,
                              std::span<const std::string> words,
                              int64_t target);

// `n` words of the seeded corpus (common English words, some punctuation).
std::vector<std::string> CorpusWords(uint64_t seed, int64_t n);

// Builds the plan. `pool` = distinct requests to prepare for cycled
// workloads (S1, S3, S2 background); `text_prompts` = text mode.
StatusOr<WorkloadPlan> BuildWorkload(const WorkloadParams& params,
                                     TokenizerClient* tokenizer,
                                     int64_t pool, bool text_prompts);

// Parses a JSONL prompt file: one object per line with "prompt" (string or
// token ids) and optional "max_tokens" (default `default_max_tokens`);
// blank lines and lines starting with '#' are skipped.
StatusOr<std::vector<PlannedRequest>> ParsePromptFile(
    std::string_view content, int64_t default_max_tokens);

}  // namespace weft::loadgen
