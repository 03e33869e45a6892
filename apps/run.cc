// `weft run -m MODEL -p PROMPT [-n N] [--temp T] ...`: generates text from a
// prompt with one sequence, streaming it to stdout as tokens come, then
// prints prompt and generation speed to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "model/kv_cache.h"
#include "model/model.h"
#include "sampling/sampler.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// Piece text for logprob listings, control bytes escaped.
std::string Shown(const tokenizer::Tokenizer& tok, int32_t id) {
  return CEscape(tok.TokenToPiece(id, /*render_special=*/true), 32);
}

int RunRun(int argc, char** argv) {
  FlagSet flags("weft run [-m MODEL] -p PROMPT [flags]",
                "Generate text from a prompt, streaming it to stdout.");
  ModelFlags model_flags(WEFT_DEFAULT_MODEL);
  SamplingFlags sampling_flags;
  ThreadFlags thread_flags(
      "compute threads", std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 4));
  KvFlags kv_flags("KV cache storage: f16 (as weft serve), f32 or q8_0");
  std::string prompt;
  int64_t n_predict = 64, logprobs = -1, ctx = 0;
  bool echo = true;
  model_flags.Register(&flags);
  flags.String("prompt", &prompt, "prompt text", 'p');
  flags.Int("n-predict", &n_predict, "tokens to generate (stops early at end of text)", 'n');
  sampling_flags.Register(&flags);
  flags.Int("logprobs", &logprobs, "print the top-N log probabilities of each token to stderr");
  flags.Int("ctx", &ctx, "context size in tokens; 0 = min(training context, 4096)");
  thread_flags.Register(&flags);
  flags.Bool("echo", &echo, "print the prompt before the generated text");
  kv_flags.Register(&flags);
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty()) {
    fprintf(stderr, "weft run: unexpected argument '%s'\n", CEscape(args[0]).c_str());
    return 2;
  }
  if (!flags.WasSet("prompt")) {
    fprintf(stderr, "weft run: -p PROMPT is required\n");
    return 2;
  }
  if (n_predict < 0 || n_predict > (int64_t{1} << 24)) {
    fprintf(stderr, "weft run: -n must be in [0, 16777216]\n");
    return 2;
  }
  if (thread_flags.threads < 1 || thread_flags.threads > 256) {
    fprintf(stderr, "weft run: --threads must be in [1, 256]\n");
    return 2;
  }
  if (ctx < 0 || ctx > (int64_t{1} << 24)) {
    fprintf(stderr, "weft run: --ctx must be in [0, 16777216]\n");
    return 2;
  }
  const StatusOr<model::KvType> kv_type = model::ParseKvType(kv_flags.type);
  if (!kv_type.ok()) {
    fprintf(stderr, "weft run: --kv-type must be f32, f16 or q8_0, not '%s'\n",
            CEscape(kv_flags.type).c_str());
    return 2;
  }

  // Sampling parameters are checked before the model is loaded.
  sampling::SamplingParams sp;
  sp.temperature = static_cast<float>(sampling_flags.temp);
  sp.top_p = static_cast<float>(sampling_flags.top_p);
  sp.top_k = static_cast<int32_t>(std::clamp<int64_t>(sampling_flags.top_k, INT32_MIN, INT32_MAX));
  sp.min_p = static_cast<float>(sampling_flags.min_p);
  sp.repetition_penalty = static_cast<float>(sampling_flags.repeat_penalty);
  if (sampling_flags.seed >= 0) sp.seed = static_cast<uint64_t>(sampling_flags.seed);
  if (logprobs >= 0) sp.logprobs = static_cast<int32_t>(std::min<int64_t>(logprobs, 1 << 20));
  if (Status s = sp.Validate(1 << 30); !s.ok()) {
    fprintf(stderr, "weft run: bad sampling parameters: %s\n", s.message().c_str());
    return 2;
  }

  auto model_or = model::Model::Load(model_flags.path);
  if (!model_or.ok()) {
    fprintf(stderr, "weft run: %s\n", model_or.status().message().c_str());
    return 2;
  }
  const model::Model& model = **model_or;
  const model::ModelConfig& cfg = model.config();
  auto tok_or = tokenizer::Tokenizer::FromGguf(model.gguf());
  if (!tok_or.ok()) {
    fprintf(stderr, "weft run: %s\n", tok_or.status().message().c_str());
    return 2;
  }
  const tokenizer::Tokenizer& tok = **tok_or;
  if (Status st = tok.CheckFitsModel(cfg.n_vocab); !st.ok()) {
    fprintf(stderr, "weft run: %s: %s\n", model_flags.path.c_str(),
            st.message().c_str());
    return 2;
  }
  auto sampler_or = sampling::Sampler::Create(sp, static_cast<int32_t>(cfg.n_vocab));
  if (!sampler_or.ok()) {
    fprintf(stderr, "weft run: bad sampling parameters: %s\n",
            sampler_or.status().message().c_str());
    return 2;
  }
  sampling::Sampler& sampler = *sampler_or;

  auto ids_or = tok.Encode(prompt, {.add_special = true, .parse_special = false});
  if (!ids_or.ok()) {
    fprintf(stderr, "weft run: cannot tokenize the prompt: %s\n",
            ids_or.status().message().c_str());
    return 2;
  }
  std::vector<int32_t> ids = *ids_or;
  if (ids.empty()) {
    fprintf(stderr, "weft run: the prompt is empty\n");
    return 2;
  }
  if (ctx == 0) {
    ctx = cfg.n_ctx_train > 0 ? std::min<int64_t>(cfg.n_ctx_train, 4096) : 4096;
  }
  // A prompt may fill the context: the first token needs no KV slot.
  if (static_cast<int64_t>(ids.size()) > ctx) {
    fprintf(stderr,
            "weft run: the prompt has %zu tokens but the context holds %lld "
            "(use --ctx)\n",
            ids.size(), static_cast<long long>(ctx));
    return 2;
  }
  const int64_t capacity = std::min<int64_t>(ctx, static_cast<int64_t>(ids.size()) + n_predict);
  auto kv_or = model::ContiguousKvCache::Create(cfg, static_cast<int32_t>(capacity),
                                                /*max_seqs=*/1, *kv_type);
  if (!kv_or.ok()) {
    fprintf(stderr, "weft run: %s\n", kv_or.status().message().c_str());
    return kv_or.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  model::KvCache* kv = kv_or->get();
  model::ForwardOptions fopts;
  fopts.n_threads = static_cast<int>(thread_flags.threads);

  if (echo) {
    fputs(prompt.c_str(), stdout);
    fflush(stdout);
  }
  sampler.AcceptPrompt(ids);
  std::vector<float> logits;
  const auto t0 = Clock::now();
  Status s = model.Forward(model::Batch::ForPrompt(ids), kv, &logits, fopts);
  if (!s.ok()) {
    fprintf(stderr, "\nweft run: %s\n", s.ToString().c_str());
    return 1;
  }
  const auto t1 = Clock::now();

  tokenizer::StreamDetokenizer detok(tok, {.render_special = false,
                                           .strip_leading_space = !echo});
  std::vector<std::string> logprob_lines;
  int64_t generated = 0;
  int32_t pos = static_cast<int32_t>(ids.size());
  bool context_full = false;
  while (generated < n_predict) {
    sampling::SampleResult r = sampler.Sample(logits);
    sampler.Accept(r.token);
    ++generated;
    if (r.has_logprobs) {
      std::string line = StrFormat("[%lld] %d '%s' logprob %.4f rank %d |",
                                   static_cast<long long>(generated), r.token,
                                   Shown(tok, r.token).c_str(), r.logprob, r.rank);
      for (const auto& alt : r.top_logprobs) {
        line += StrFormat(" '%s' %.4f", Shown(tok, alt.token).c_str(), alt.logprob);
      }
      logprob_lines.push_back(std::move(line));
    }
    if (tok.vocab().IsEog(r.token)) break;
    const std::string piece = detok.Push(r.token);
    if (!piece.empty()) {
      fputs(piece.c_str(), stdout);
      fflush(stdout);
    }
    if (generated == n_predict) break;
    if (pos >= capacity) {
      context_full = true;
      break;
    }
    model::Batch b;
    b.Add(r.token, pos++, 0, true);
    s = model.Forward(b, kv, &logits, fopts);
    if (!s.ok()) {
      fprintf(stderr, "\nweft run: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  fputs(detok.Flush().c_str(), stdout);
  fputs("\n", stdout);
  fflush(stdout);
  const auto t2 = Clock::now();

  for (const std::string& line : logprob_lines) fprintf(stderr, "%s\n", line.c_str());
  if (context_full) {
    fprintf(stderr, "weft run: stopped: the context of %lld tokens is full\n",
            static_cast<long long>(capacity));
  }
  const double tp = Seconds(t0, t1), tg = Seconds(t1, t2);
  // The first generated token comes from the prefill logits, so generation
  // ran generated - 1 forward passes.
  const int64_t decode_steps = std::max<int64_t>(generated - 1, 0);
  fprintf(stderr,
          "prompt: %zu tokens in %.3f s (%.1f tokens/s); generation: %lld "
          "tokens in %.3f s (%.1f tokens/s); seed %llu\n",
          ids.size(), tp, tp > 0 ? ids.size() / tp : 0.0,
          static_cast<long long>(generated), tg,
          tg > 0 ? decode_steps / tg : 0.0,
          static_cast<unsigned long long>(sampler.seed()));
  return 0;
}

}  // namespace

WEFT_COMMAND("run", "generate text from a prompt (one sequence)", RunRun);

}  // namespace weft::apps
