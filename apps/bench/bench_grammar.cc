// `weft bench grammar [-m MODEL] [--threads 2] [--steps 64] [--rounds 5]
// [--batches 1,8] [--temps 0,0.8] [--corpus FILES] [--verify]`: the cost of
// structured outputs (issue #33's targets) in one process, on the model.
//
//   decode: B sequences decode --steps tokens as one Forward per step, each
//     sampled by its own Sampler (seed 1000 + i), unconstrained (every token
//     accepted, end tokens too) or constrained by the json_schema of
//     bench/grammar_schemas.json's "mask_cost" entry (200 items: it does not
//     end sooner); per step: forward ms, sampling ms (Sample + Accept of the
//     B sequences, masks included) and the total. Runs alternate
//     unconstrained / constrained, --rounds of each; the first constrained
//     run of each point (shown as "cold") fills the grammar's mask index,
//     which the server keeps across requests; the medians are of the rest.
//   compile: every schema of --corpus (files of {"cases": [{"schema"}]} or
//     {"schemas": {name: schema}}) compiled --compile-reps times, uncached:
//     p50, p99 and max over all compiles, and the slowest schema's median.
//   --verify: every constrained mask is also computed by the full
//     vocabulary walk and must be equal (GrammarConstraint::ReferenceMask).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/bench_stats.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "gguf/gguf.h"
#include "model/batch.h"
#include "model/kv_storage.h"
#include "model/model.h"
#include "sampling/grammar_cache.h"
#include "sampling/mask_index.h"
#include "sampling/sampler.h"
#include "sampling/schema_grammar.h"
#include "tokenizer/tokenizer.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;

double MsSince(Clock::time_point a) {
  return std::chrono::duration<double, std::milli>(Clock::now() - a).count();
}

struct GrammarBenchOptions {
  ModelFlags model{WEFT_DEFAULT_MODEL};
  ThreadFlags threads{"compute threads (the caller included)", 2};
  int64_t steps = 64;
  int64_t rounds = 5;
  int64_t compile_reps = 20;
  std::string batches = "1,8";
  std::string temps = "0,0.8";
  std::string corpus =
      "bench/grammar_schemas.json,tests/sampling/testdata/schema_vectors.json";
  std::string schema = "mask_cost";
  bool verify = false;
};

// Per-step figures of one run (ms).
struct StepTimes {
  double forward = 0, sample = 0;
  double total() const { return forward + sample; }
};

StatusOr<json> ReadJson(const std::string& path) {
  std::ifstream f(path);
  if (!f) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError(path + " is not JSON");
  return j;
}

class GrammarBench {
 public:
  GrammarBench(const model::Model& m, const GrammarBenchOptions& o,
               std::shared_ptr<const sampling::VocabBytes> vocab, std::vector<int32_t> prompt,
               int32_t eos)
      : m_(m), o_(o), vocab_(std::move(vocab)), prompt_(std::move(prompt)), eos_(eos) {
    opts_.n_threads = static_cast<int>(o.threads.threads);
  }

  // One run: B sequences, --steps decode steps.
  StatusOr<StepTimes> Run(int b, double temp, const sampling::StructuredOutput* structured) {
    const int32_t ctx = static_cast<int32_t>(prompt_.size() + o_.steps + 1);
    ASSIGN_OR_RETURN(auto kv, model::ContiguousKvStorage::Create(m_.config(), ctx, b,
                                                                  model::KvType::kF16));
    std::vector<sampling::Sampler> samplers;
    std::vector<int32_t> last(static_cast<size_t>(b));
    std::vector<float> logits;
    const size_t v = static_cast<size_t>(vocab_->size());
    for (int i = 0; i < b; ++i) {
      sampling::SamplingParams p;
      p.temperature = static_cast<float>(temp);
      p.seed = 1000 + static_cast<uint64_t>(i);
      if (structured != nullptr) p.structured = *structured;
      p.json_end_tokens = {eos_};
      ASSIGN_OR_RETURN(sampling::Sampler s, sampling::Sampler::Create(p, vocab_->size(), vocab_));
      samplers.push_back(std::move(s));
      RETURN_IF_ERROR(m_.Forward(model::Batch::ForPrompt(prompt_, 0, i), kv.get(), &logits, opts_));
      last[static_cast<size_t>(i)] = Pick(&samplers.back(), logits, 0);
    }
    StepTimes t;
    const int32_t start = static_cast<int32_t>(prompt_.size());
    for (int64_t step = 0; step < o_.steps; ++step) {
      model::Batch batch;
      for (int i = 0; i < b; ++i) {
        batch.Add(last[static_cast<size_t>(i)], start + static_cast<int32_t>(step), i, true);
      }
      const Clock::time_point t0 = Clock::now();
      RETURN_IF_ERROR(m_.Forward(batch, kv.get(), &logits, opts_));
      const Clock::time_point t1 = Clock::now();
      for (int i = 0; i < b; ++i) {
        last[static_cast<size_t>(i)] = Pick(&samplers[static_cast<size_t>(i)], logits, i * v);
      }
      t.forward += std::chrono::duration<double, std::milli>(t1 - t0).count();
      t.sample += MsSince(t1);
    }
    t.forward /= static_cast<double>(o_.steps);
    t.sample /= static_cast<double>(o_.steps);
    return t;
  }

  int64_t mismatches() const { return mismatches_; }

 private:
  // Samples and accepts one token from row `at` of `logits` (an exhausted
  // constraint feeds the end token, which accepts nothing).
  int32_t Pick(sampling::Sampler* s, const std::vector<float>& logits, size_t at) {
    const size_t v = static_cast<size_t>(vocab_->size());
    const sampling::SampleResult r = s->Sample(std::span<const float>(logits.data() + at, v));
    const int32_t token = r.exhausted ? eos_ : r.token;
    s->Accept(token);
    if (o_.verify && s->grammar() != nullptr) {
      sampling::GrammarConstraint* g = s->grammar();
      const std::span<const uint64_t> fast = g->AllowedMask();
      if (!std::equal(fast.begin(), fast.end(), g->ReferenceMask().begin())) ++mismatches_;
    }
    return token;
  }

  const model::Model& m_;
  const GrammarBenchOptions& o_;
  const std::shared_ptr<const sampling::VocabBytes> vocab_;
  const std::vector<int32_t> prompt_;
  const int32_t eos_;
  model::ForwardOptions opts_;
  int64_t mismatches_ = 0;
};

// Compile times of every schema of the corpus files (ms, uncached).
Status CompileTimes(const GrammarBenchOptions& o) {
  std::vector<std::pair<std::string, std::string>> schemas;  // name, text
  for (std::string_view path : StrSplit(o.corpus, ',')) {
    if (path.empty()) continue;
    ASSIGN_OR_RETURN(json j, ReadJson(std::string(path)));
    if (j.contains("cases")) {
      for (const json& c : j["cases"]) schemas.emplace_back(c["name"], c["schema"].dump());
    }
    if (j.contains("schemas")) {
      for (auto& [name, s] : j["schemas"].items()) schemas.emplace_back(name, s.dump());
    }
  }
  std::vector<double> all;
  double worst = 0;
  std::string worst_name;
  for (const auto& [name, text] : schemas) {
    std::vector<double> t;
    for (int64_t r = 0; r < o.compile_reps; ++r) {
      const Clock::time_point a = Clock::now();
      auto g = sampling::CompileJsonSchema(text);
      t.push_back(MsSince(a));
      if (!g.ok()) return InvalidArgumentError(name + ": " + g.status().ToString());
    }
    std::sort(t.begin(), t.end());
    if (t[t.size() / 2] >= worst) worst = t[t.size() / 2], worst_name = name;
    all.insert(all.end(), t.begin(), t.end());
  }
  if (all.empty()) return InvalidArgumentError("no schemas in --corpus");
  std::sort(all.begin(), all.end());
  std::printf("compile: %zu schemas x %lld: p50 %.3f ms, p99 %.3f ms, max %.3f ms; "
              "slowest schema's median %.3f ms (%s)\n",
              schemas.size(), static_cast<long long>(o.compile_reps), all[all.size() / 2],
              all[std::min(all.size() - 1, all.size() * 99 / 100)], all.back(), worst,
              worst_name.c_str());
  return OkStatus();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Status DecodeTimes(const model::Model& m, const tokenizer::Tokenizer& tok,
                   const GrammarBenchOptions& o) {
  std::vector<std::string> pieces(static_cast<size_t>(m.config().n_vocab));
  for (int32_t id = 0; id < tok.n_tokens(); ++id) pieces[id] = std::string(tok.TokenToPiece(id));
  auto vocab = std::make_shared<const sampling::VocabBytes>(std::move(pieces));
  ASSIGN_OR_RETURN(json schemas, ReadJson("bench/grammar_schemas.json"));
  ASSIGN_OR_RETURN(auto grammar, sampling::CompileConstraint(
                                     sampling::ConstraintKind::kJsonSchema,
                                     schemas["schemas"][o.schema].dump()));
  const sampling::StructuredOutput structured{sampling::ConstraintKind::kJsonSchema, grammar};
  tokenizer::EncodeOptions enc;
  enc.parse_special = true;
  ASSIGN_OR_RETURN(std::vector<int32_t> prompt,
                   tok.Encode("<|im_start|>user\nList groceries as JSON.<|im_end|>\n"
                              "<|im_start|>assistant\n", enc));
  GrammarBench bench(m, o, vocab, prompt, tok.vocab().eos);
  // "mask overhead": the sampling time the constraint adds over the
  // unconstrained step, steadier than the step overhead where the machine's
  // load moves the forward pass from run to run.
  std::printf("\n| B | temp | unconstrained ms/step | json_schema ms/step | step overhead | "
              "sampling ms/step (plain / schema) | mask overhead | cold json_schema ms/step |\n"
              "|---|---|---|---|---|---|---|---|\n");
  std::vector<int> batches;
  for (std::string_view s : StrSplit(o.batches, ',')) batches.push_back(std::stoi(std::string(s)));
  for (int b : batches) {
    for (std::string_view ts : StrSplit(o.temps, ',')) {
      const double temp = std::stod(std::string(ts));
      std::vector<double> plain, cons, plain_s, cons_s;
      double cold = 0;
      for (int64_t r = 0; r <= o.rounds; ++r) {
        ASSIGN_OR_RETURN(StepTimes p, bench.Run(b, temp, nullptr));
        ASSIGN_OR_RETURN(StepTimes c, bench.Run(b, temp, &structured));
        if (r == 0) {
          cold = c.total();
          continue;
        }
        plain.push_back(p.total()), plain_s.push_back(p.sample);
        cons.push_back(c.total()), cons_s.push_back(c.sample);
      }
      const double pm = Median(plain), cm = Median(cons);
      const double ps = Median(plain_s), cs = Median(cons_s);
      std::printf("| %d | %.1f | %.2f | %.2f | %+.1f%% | %.3f / %.3f | %+.1f%% | %.2f |\n", b, temp,
                  pm, cm, 100 * (cm / pm - 1), ps, cs, 100 * (cs - ps) / pm, cold);
      std::fflush(stdout);
    }
  }
  const sampling::GrammarMaskIndex::Stats st = sampling::GrammarMaskIndex::For(grammar, vocab)->stats();
  std::printf("mask index: %llu entries built, %llu masks from it, %llu full walks\n",
              static_cast<unsigned long long>(st.built), static_cast<unsigned long long>(st.masks),
              static_cast<unsigned long long>(st.fallbacks));
  if (o.verify) {
    std::printf("verify: %lld masks differed from the full walk\n",
                static_cast<long long>(bench.mismatches()));
    if (bench.mismatches() > 0) return InternalError("masks differ from the full walk");
  }
  return OkStatus();
}

int RunBenchGrammar(int argc, char** argv) {
  GrammarBenchOptions o;
  FlagSet flags("weft bench grammar [-m MODEL] [--threads 2] [--steps 64] [--rounds 5]",
                "Structured outputs' cost: per-step decode time with and without a "
                "json_schema constraint, and schema compile times (run from the repository "
                "root: the schemas are read from bench/ and tests/).");
  o.model.Register(&flags);
  o.threads.Register(&flags);
  flags.Int("steps", &o.steps, "decode steps per run");
  flags.Int("rounds", &o.rounds, "timed runs of each kind per point, after one cold one");
  flags.Int("compile-reps", &o.compile_reps, "compiles of each corpus schema (0 = skip)");
  flags.String("batches", &o.batches, "batch sizes (empty = skip decode)");
  flags.String("temps", &o.temps, "temperatures (0 = greedy)");
  flags.String("corpus", &o.corpus, "schema files to compile, comma-separated");
  flags.String("schema", &o.schema, "the decode runs' schema: a name in bench/grammar_schemas.json");
  flags.Bool("verify", &o.verify, "check every constrained mask against the full walk");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty() || o.steps < 1 || o.rounds < 1 || o.threads.threads < 1 ||
      o.compile_reps < 0) {
    return UsageError("grammar: unexpected argument, or --steps/--rounds/--threads < 1");
  }
  if (o.compile_reps > 0) {
    if (Status s = CompileTimes(o); !s.ok()) return UsageError("grammar: " + s.ToString());
  }
  if (o.batches.empty()) return 0;
  auto model_or = model::Model::Load(o.model.path, model::LoadOptions{});
  if (!model_or.ok()) return UsageError("grammar: " + model_or.status().ToString());
  auto tok = tokenizer::Tokenizer::FromGguf((*model_or)->gguf());
  if (!tok.ok()) return UsageError("grammar: " + tok.status().ToString());
  std::printf("model %s, %lld threads, %lld steps, %lld rounds\n", o.model.path.c_str(),
              static_cast<long long>(o.threads.threads), static_cast<long long>(o.steps),
              static_cast<long long>(o.rounds));
  if (Status s = DecodeTimes(**model_or, **tok, o); !s.ok()) {
    std::fprintf(stderr, "weft bench grammar: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

WEFT_BENCH_VERB("grammar", "structured outputs: mask cost per decode step, compile times",
                RunBenchGrammar);

}  // namespace weft::apps
