// `weft run -m MODEL -p PROMPT [-n N] [--temp T] ...`: generates text from a
// prompt with one sequence, streaming it to stdout as tokens come, then
// prints prompt and generation speed to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "model/kv_storage.h"
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

// The flags of `weft run`.
struct RunOptions {
  // -m: the GGUF file.
  ModelFlags model{WEFT_DEFAULT_MODEL};
  // --temp, --top-p, ...: the sampler.
  SamplingFlags sampling;
  // -t: compute threads, at most 4 by default (one sequence gains little
  // from more).
  ThreadFlags threads{"compute threads",
                      std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 4)};
  // --kv-type only: the cache holds exactly this run's tokens.
  KvFlags kv{"KV cache storage: f16 (as weft serve), f32 or q8_0"};
  // -p: the prompt text (required).
  std::string prompt;
  // -n: most tokens to generate.
  int64_t n_predict = 64;
  // Top-N log probabilities to print per token; -1 = none.
  int64_t logprobs = -1;
  // Context size in tokens; 0 = min(training context, 4096).
  int64_t ctx = 0;
  // Print the prompt before the generated text.
  bool echo = true;
};

// The checked flags: the options and what they parse into.
struct RunConfig {
  RunOptions options;
  model::KvType kv_type = model::KvType::kF16;
  sampling::SamplingParams sampling;
};

// What a run works on, loaded from the model file.
struct RunSetup {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tok;
  std::optional<sampling::Sampler> sampler;
  std::vector<int32_t> ids;  // the prompt's tokens
  std::unique_ptr<model::KvStorage> kv;
  int64_t capacity = 0;  // tokens the KV cache holds
};

// What the generation loop produced, and when.
struct RunResult {
  int64_t generated = 0;
  bool context_full = false;
  std::vector<std::string> logprob_lines;
  Clock::time_point start, prefilled, done;
};

int Usage(const std::string& message) {
  fprintf(stderr, "weft run: %s\n", message.c_str());
  return 2;
}

// Parses and checks the flags; false with *rc the exit code when the
// command is done (after --help or on bad usage).
bool ParseRunFlags(int argc, char** argv, RunConfig* config, int* rc) {
  RunOptions& o = config->options;
  FlagSet flags("weft run [-m MODEL] -p PROMPT [flags]",
                "Generate text from a prompt, streaming it to stdout.");
  o.model.Register(&flags);
  flags.String("prompt", &o.prompt, "prompt text", 'p');
  flags.Int("n-predict", &o.n_predict, "tokens to generate (stops early at end of text)", 'n');
  o.sampling.Register(&flags);
  flags.Int("logprobs", &o.logprobs, "print the top-N log probabilities of each token to stderr");
  flags.Int("ctx", &o.ctx, "context size in tokens; 0 = min(training context, 4096)");
  o.threads.Register(&flags);
  flags.Bool("echo", &o.echo, "print the prompt before the generated text");
  o.kv.Register(&flags);
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  *rc = 2;
  auto fail = [](const std::string& message) {
    Usage(message);
    return false;
  };
  if (!args.empty()) return fail("unexpected argument '" + CEscape(args[0]) + "'");
  if (!flags.WasSet("prompt")) return fail("-p PROMPT is required");
  if (o.n_predict < 0 || o.n_predict > (int64_t{1} << 24)) {
    return fail("-n must be in [0, 16777216]");
  }
  if (o.threads.threads < 1 || o.threads.threads > 256) {
    return fail("--threads must be in [1, 256]");
  }
  if (o.ctx < 0 || o.ctx > (int64_t{1} << 24)) {
    return fail("--ctx must be in [0, 16777216]");
  }
  const StatusOr<model::KvType> kv_type = model::ParseKvType(o.kv.type);
  if (!kv_type.ok()) {
    return fail("--kv-type must be f32, f16 or q8_0, not '" + CEscape(o.kv.type) + "'");
  }
  config->kv_type = *kv_type;

  // Sampling parameters are checked before the model is loaded.
  sampling::SamplingParams& sp = config->sampling;
  sp.temperature = static_cast<float>(o.sampling.temp);
  sp.top_p = static_cast<float>(o.sampling.top_p);
  sp.top_k = static_cast<int32_t>(std::clamp<int64_t>(o.sampling.top_k, INT32_MIN, INT32_MAX));
  sp.min_p = static_cast<float>(o.sampling.min_p);
  sp.repetition_penalty = static_cast<float>(o.sampling.repeat_penalty);
  if (o.sampling.seed >= 0) sp.seed = static_cast<uint64_t>(o.sampling.seed);
  if (o.logprobs >= 0) sp.logprobs = static_cast<int32_t>(std::min<int64_t>(o.logprobs, 1 << 20));
  if (Status s = sp.Validate(1 << 30); !s.ok()) {
    return fail("bad sampling parameters: " + s.message());
  }
  return true;
}

// Loads the model, tokenizer and sampler, tokenizes the prompt and sizes
// the KV cache. Returns 0, or the exit code.
int BuildRun(const RunConfig& config, RunSetup* setup) {
  const RunOptions& o = config.options;
  auto model_or = model::Model::Load(o.model.path);
  if (!model_or.ok()) return Usage(model_or.status().message());
  setup->model = std::move(*model_or);
  const model::ModelConfig& cfg = setup->model->config();
  auto tok_or = tokenizer::Tokenizer::FromGguf(setup->model->gguf());
  if (!tok_or.ok()) return Usage(tok_or.status().message());
  setup->tok = std::move(*tok_or);
  if (Status st = setup->tok->CheckFitsModel(cfg.n_vocab); !st.ok()) {
    return Usage(o.model.path + ": " + st.message());
  }
  auto sampler_or = sampling::Sampler::Create(config.sampling, static_cast<int32_t>(cfg.n_vocab));
  if (!sampler_or.ok()) {
    return Usage("bad sampling parameters: " + sampler_or.status().message());
  }
  setup->sampler.emplace(std::move(*sampler_or));

  auto ids_or = setup->tok->Encode(o.prompt, {.add_special = true, .parse_special = false});
  if (!ids_or.ok()) return Usage("cannot tokenize the prompt: " + ids_or.status().message());
  setup->ids = *ids_or;
  if (setup->ids.empty()) return Usage("the prompt is empty");
  int64_t ctx = o.ctx;
  if (ctx == 0) {
    ctx = cfg.n_ctx_train > 0 ? std::min<int64_t>(cfg.n_ctx_train, 4096) : 4096;
  }
  // A prompt may fill the context: the first token needs no KV slot.
  if (static_cast<int64_t>(setup->ids.size()) > ctx) {
    return Usage(StrFormat("the prompt has %zu tokens but the context holds %lld (use --ctx)",
                           setup->ids.size(), static_cast<long long>(ctx)));
  }
  setup->capacity =
      std::min<int64_t>(ctx, static_cast<int64_t>(setup->ids.size()) + o.n_predict);
  auto kv_or = model::ContiguousKvStorage::Create(cfg, static_cast<int32_t>(setup->capacity),
                                                /*max_seqs=*/1, config.kv_type);
  if (!kv_or.ok()) {
    fprintf(stderr, "weft run: %s\n", kv_or.status().message().c_str());
    return kv_or.status().code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  setup->kv = std::move(*kv_or);
  return 0;
}

// One logprob listing line of the generated token r.
std::string LogprobLine(const tokenizer::Tokenizer& tok, int64_t n,
                        const sampling::SampleResult& r) {
  std::string line = StrFormat("[%lld] %d '%s' logprob %.4f rank %d |",
                               static_cast<long long>(n), r.token,
                               Shown(tok, r.token).c_str(), r.logprob, r.rank);
  for (const auto& alt : r.top_logprobs) {
    line += StrFormat(" '%s' %.4f", Shown(tok, alt.token).c_str(), alt.logprob);
  }
  return line;
}

// Prefills the prompt and generates, streaming text to stdout. Returns 0,
// or 1 when a forward pass fails.
int Generate(const RunOptions& o, RunSetup* setup, RunResult* result) {
  const model::Model& model = *setup->model;
  const tokenizer::Tokenizer& tok = *setup->tok;
  sampling::Sampler& sampler = *setup->sampler;
  model::ForwardOptions fopts;
  fopts.n_threads = static_cast<int>(o.threads.threads);
  if (o.echo) {
    fputs(o.prompt.c_str(), stdout);
    fflush(stdout);
  }
  sampler.AcceptPrompt(setup->ids);
  std::vector<float> logits;
  result->start = Clock::now();
  Status s = model.Forward(model::Batch::ForPrompt(setup->ids), setup->kv.get(), &logits, fopts);
  if (!s.ok()) {
    fprintf(stderr, "\nweft run: %s\n", s.ToString().c_str());
    return 1;
  }
  result->prefilled = Clock::now();

  tokenizer::StreamDetokenizer detok(tok, {.render_special = false,
                                           .strip_leading_space = !o.echo});
  int32_t pos = static_cast<int32_t>(setup->ids.size());
  while (result->generated < o.n_predict) {
    sampling::SampleResult r = sampler.Sample(logits);
    sampler.Accept(r.token);
    ++result->generated;
    if (r.has_logprobs) {
      result->logprob_lines.push_back(LogprobLine(tok, result->generated, r));
    }
    if (tok.vocab().IsEog(r.token)) break;
    const std::string piece = detok.Push(r.token);
    if (!piece.empty()) {
      fputs(piece.c_str(), stdout);
      fflush(stdout);
    }
    if (result->generated == o.n_predict) break;
    if (pos >= setup->capacity) {
      result->context_full = true;
      break;
    }
    model::Batch b;
    b.Add(r.token, pos++, 0, true);
    s = model.Forward(b, setup->kv.get(), &logits, fopts);
    if (!s.ok()) {
      fprintf(stderr, "\nweft run: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  fputs(detok.Flush().c_str(), stdout);
  fputs("\n", stdout);
  fflush(stdout);
  result->done = Clock::now();
  return 0;
}

// The logprob listing and the speed line, on stderr.
void ReportRun(const RunSetup& setup, const RunResult& result) {
  for (const std::string& line : result.logprob_lines) fprintf(stderr, "%s\n", line.c_str());
  if (result.context_full) {
    fprintf(stderr, "weft run: stopped: the context of %lld tokens is full\n",
            static_cast<long long>(setup.capacity));
  }
  const double tp = Seconds(result.start, result.prefilled);
  const double tg = Seconds(result.prefilled, result.done);
  // The first generated token comes from the prefill logits, so generation
  // ran generated - 1 forward passes.
  const int64_t decode_steps = std::max<int64_t>(result.generated - 1, 0);
  fprintf(stderr,
          "prompt: %zu tokens in %.3f s (%.1f tokens/s); generation: %lld "
          "tokens in %.3f s (%.1f tokens/s); seed %llu\n",
          setup.ids.size(), tp, tp > 0 ? setup.ids.size() / tp : 0.0,
          static_cast<long long>(result.generated), tg,
          tg > 0 ? decode_steps / tg : 0.0,
          static_cast<unsigned long long>(setup.sampler->seed()));
}

int RunRun(int argc, char** argv) {
  RunConfig config;
  if (int rc; !ParseRunFlags(argc, argv, &config, &rc)) return rc;
  RunSetup setup;
  if (int rc = BuildRun(config, &setup); rc != 0) return rc;
  RunResult result;
  if (int rc = Generate(config.options, &setup, &result); rc != 0) return rc;
  ReportRun(setup, result);
  return 0;
}

}  // namespace

WEFT_COMMAND("run", "generate text from a prompt (one sequence)", RunRun);

}  // namespace weft::apps
