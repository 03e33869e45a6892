// `weft bench kv [-m MODEL] [--threads N] [--reps 5] [--json FILE] ...`:
// the paged KV cache's cost and payoff.
//
//   decode   one batched decode step (ONE Forward of B sequences, each with
//            --ctx tokens of context) through PagedKvStorage, blocks of
//            --block-size tokens scattered over the pool, for B in
//            --batches, per KV storage type in --types; against the
//            contiguous cache at B = 1 (paging overhead = paged / contiguous)
//   ttft     time to first token of a --prompt-token prompt whose first
//            --cached tokens were computed by an earlier request (prefix
//            cache hit) vs not (prefix caching off), through the
//            Scheduler and ModelExecutor (Schedule -> Execute -> Update, the
//            engine's loop without its thread), KV as the server sizes it
//            (f16, a local group for sliding-window layers)
//
// Every figure is the median of --reps runs after one warm-up, with min-max.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "apps/bench/bench.h"
#include "apps/bench/bench_json.h"
#include "apps/bench/bench_stats.h"
#include "apps/build_info.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "engine/model_executor.h"
#include "engine/scheduler.h"
#include "kv/kv_sizing.h"
#include "model/model.h"
#include "model/paged_kv_storage.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

std::string CommandLine(int argc, char** argv) {
  std::string s = "weft bench";
  for (int i = 0; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

int Usage(const std::string& m) {
  std::fprintf(stderr, "weft bench kv: %s\n", m.c_str());
  return 2;
}

int Fail(const Status& s) {
  std::fprintf(stderr, "weft bench kv: %s\n", s.ToString().c_str());
  return 1;
}

StatusOr<std::vector<int>> ParseInts(const std::string& list) {
  std::vector<int> out;
  for (std::string_view piece : StrSplit(list, ',')) {
    const std::string part(piece);
    if (part.empty()) continue;
    char* end = nullptr;
    const long b = std::strtol(part.c_str(), &end, 10);
    if (*end != '\0' || b < 1 || b > 1024) {
      return InvalidArgumentError(StrFormat("bad batch size '%s'", part.c_str()));
    }
    out.push_back(static_cast<int>(b));
  }
  return out;
}

struct Args {
  int threads = 2, reps = 5, ctx = 256, block_size = 16, prompt = 1024,
      cached = 1000;
};

// Decode step times for one storage type: contiguous B = 1, paged B = each.
StatusOr<json> DecodeCurve(const model::Model& m, const Args& a,
                           model::KvType type, const std::vector<int>& batches,
                           std::mt19937* rng, std::string* table) {
  const model::ModelConfig& c = m.config();
  model::ForwardOptions opts;
  opts.n_threads = a.threads;
  auto tokens = [&](int n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& t : ids) t = static_cast<int32_t>((*rng)() % static_cast<uint32_t>(c.n_vocab));
    return ids;
  };
  const std::vector<int32_t> prompt = tokens(a.ctx);
  std::vector<float> logits;
  json out;
  out["type"] = model::KvTypeName(type);
  // Contiguous, B = 1.
  ASSIGN_OR_RETURN(auto flat, model::ContiguousKvStorage::Create(c, a.ctx + 1, 1, type));
  RETURN_IF_ERROR(m.Forward(model::Batch::ForPrompt(prompt), flat.get(), &logits, opts));
  const int32_t next = prompt[0];
  ASSIGN_OR_RETURN(Stat contiguous, Time(a.reps, [&] {
    return m.Forward(model::Batch::ForPrompt({next}, a.ctx), flat.get(), &logits, opts);
  }));
  out["contiguous_b1"] = StatJson(contiguous);
  *table += StrFormat("| %s | contiguous | 1 | %.3f | %.3f-%.3f | 1.000 |\n",
                      model::KvTypeName(type), contiguous.median * 1e3,
                      contiguous.min * 1e3, contiguous.max * 1e3);
  // Paged: each sequence's blocks scattered over the pool.
  const int max_b = *std::max_element(batches.begin(), batches.end());
  const int per_seq = (a.ctx + 1 + a.block_size - 1) / a.block_size;
  model::PagedKvOptions po;
  po.num_blocks = max_b * per_seq;
  po.block_size = a.block_size;
  po.type = type;
  ASSIGN_OR_RETURN(auto paged, model::PagedKvStorage::Create(c, po));
  std::vector<int32_t> ids(static_cast<size_t>(po.num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), *rng);
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(max_b));
  for (int s = 0; s < max_b; ++s) {
    tables[size_t(s)].assign(ids.begin() + s * per_seq, ids.begin() + (s + 1) * per_seq);
  }
  paged->SetBlockTable(0, tables[0], 0);
  RETURN_IF_ERROR(m.Forward(model::Batch::ForPrompt(prompt), paged.get(), &logits, opts));
  for (int s = 1; s < max_b; ++s) {  // same context, copied block by block
    for (int i = 0; i < per_seq; ++i) {
      paged->CopyBlock(tables[0][size_t(i)], tables[size_t(s)][size_t(i)]);
    }
  }
  json curve = json::array();
  for (int b : batches) {
    model::Batch batch;
    for (int s = 0; s < b; ++s) batch.Add(next, a.ctx, s, true);
    ASSIGN_OR_RETURN(Stat st, Time(a.reps, [&] {
      for (int s = 0; s < b; ++s) paged->SetBlockTable(s, tables[size_t(s)], a.ctx);
      return m.Forward(batch, paged.get(), &logits, opts);
    }));
    json j = StatJson(st);
    j["batch"] = b;
    j["ms_per_seq"] = st.median * 1e3 / b;
    j["ratio_to_contiguous_b1"] = st.median / contiguous.median;
    curve.push_back(j);
    *table += StrFormat("| %s | paged | %d | %.3f | %.3f-%.3f | %.3f |\n",
                        model::KvTypeName(type), b, st.median * 1e3, st.min * 1e3,
                        st.max * 1e3, st.median / contiguous.median);
    if (b == 1) out["paging_overhead_b1"] = st.median / contiguous.median - 1.0;
  }
  out["paged"] = curve;
  return out;
}

// TTFT (seconds) of `prompt` through a fresh scheduler + executor; with
// `warm`, a request sharing prompt[0, cached) ran to completion first.
StatusOr<double> Ttft(const model::Model& m, const Args& a,
                      const std::vector<int32_t>& prompt,
                      const std::vector<int32_t>& warm, bool caching,
                      int* hit_tokens) {
  engine::SchedulerConfig sc;
  sc.enable_prefix_caching = caching;
  sc.max_seqs = 4;
  sc.max_model_len = static_cast<int>(prompt.size()) + 8;
  ASSIGN_OR_RETURN(const kv::KvLayout layout,
                   model::KvLayoutOf(m.config(), model::KvType::kF16));
  ASSIGN_OR_RETURN(kv::KvCacheConfig kv,
                   kv::KvConfigForBytes(layout, a.block_size, 256ull << 20,
                                        {sc.max_seqs, sc.MaxPassTokens()}));
  engine::ModelExecutorConfig ec;
  ec.num_threads = a.threads;
  ec.kv_type = model::KvType::kF16;
  ASSIGN_OR_RETURN(auto sched, engine::Scheduler::Create(sc, kv));
  ASSIGN_OR_RETURN(auto exec, engine::CreateModelExecutor(&m, kv, ec));
  auto run = [&](engine::RequestId id, const std::vector<int32_t>& p) -> StatusOr<int> {
    engine::RequestSpec spec;
    spec.id = id;
    spec.prompt = p;
    spec.stop.max_tokens = 1;
    spec.sampling.temperature = 0;
    RETURN_IF_ERROR(sched->Submit(std::move(spec)));
    while (sched->HasWork()) {
      engine::StepPlan plan = sched->Schedule();
      ASSIGN_OR_RETURN(std::vector<engine::SampledToken> out, exec->Execute(plan));
      sched->Update(plan, out);
      for (const engine::RequestEvent& ev : sched->TakeEvents()) {
        if (ev.reason == engine::FinishReason::kError) return InternalError(ev.error);
        if (!ev.new_tokens.empty()) return ev.num_cached_tokens;
      }
    }
    return InternalError("no token");
  };
  if (!warm.empty()) RETURN_IF_ERROR(run(1, warm).status());
  const auto t0 = Clock::now();
  ASSIGN_OR_RETURN(*hit_tokens, run(2, prompt));
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The flags of `weft bench kv`.
struct KvBenchOptions {
  // -m: the GGUF file (Gemma 3 270M by default).
  ModelFlags model{WEFT_BENCH_MODEL};
  // -t: compute threads, the caller included.
  ThreadFlags threads{"compute threads (caller included)", /*default_threads=*/2};
  // --reps, --json.
  MeasureFlags measure;
  // Context tokens of each sequence in the decode test.
  int64_t ctx = 256;
  // Batch sizes of the decode curve (empty = skip) and its KV storage types.
  std::string batch_list = "1,2,4,8,16,32";
  std::string type_list = "f32,f16";
  // Tokens per KV block.
  int64_t block_size = 16;
  // Prompt tokens of the TTFT test (0 = skip), of which `cached` were
  // computed by an earlier request.
  int64_t prompt = 1024;
  int64_t cached = 1000;
};

// Parses and checks the flags; false with *rc the exit code when the
// command is done.
bool ParseKvBenchFlags(int argc, char** argv, KvBenchOptions* o, std::vector<int>* batches,
                       std::vector<model::KvType>* types, int* rc) {
  FlagSet flags("weft bench kv [-m MODEL] [--threads N] [--reps 5] [--json FILE]",
                "Paged KV cache: decode step vs batch size (paged vs contiguous, "
                "per storage type) and TTFT with a prefix-cache hit.");
  o->model.Register(&flags);
  o->threads.Register(&flags);
  o->measure.Register(&flags);
  flags.Int("ctx", &o->ctx, "context tokens of each sequence in the decode test");
  flags.String("batches", &o->batch_list, "batch sizes of the decode curve (empty = skip)");
  flags.String("types", &o->type_list, "KV storage types of the decode curve (f32,f16,q8_0)");
  flags.Int("block-size", &o->block_size, "tokens per KV block");
  flags.Int("prompt", &o->prompt, "prompt tokens of the TTFT test (0 = skip)");
  flags.Int("cached", &o->cached, "of which computed by an earlier request");
  std::vector<std::string> rest;
  if (!flags.Parse(argc, argv, &rest, rc)) return false;
  *rc = 2;
  auto fail = [](const std::string& message) {
    Usage(message);
    return false;
  };
  if (!rest.empty()) return fail(StrFormat("unexpected argument '%s'", rest[0].c_str()));
  const int64_t threads = o->threads.threads;
  if (threads < 1 || threads > 256 || o->measure.reps < 1 || o->measure.reps > 1000 || o->ctx < 1 ||
      o->ctx > (1 << 16) || o->block_size < 1 || o->block_size > 1024 || o->prompt < 0 ||
      o->prompt > (1 << 16) || o->cached < 0 || (o->prompt > 0 && o->cached >= o->prompt)) {
    return fail("--threads, --reps, --ctx, --block-size, --prompt or --cached out of range");
  }
  StatusOr<std::vector<int>> parsed = ParseInts(o->batch_list);
  if (!parsed.ok()) return fail(std::string(parsed.status().message()));
  *batches = std::move(*parsed);
  for (std::string_view piece : StrSplit(o->type_list, ',')) {
    if (piece.empty()) continue;
    StatusOr<model::KvType> t = model::ParseKvType(piece);
    if (!t.ok()) return fail(std::string(t.status().message()));
    types->push_back(*t);
  }
  return true;
}

// The TTFT test: a prompt whose first a.cached tokens an earlier request
// computed, with and without prefix caching. Sets out["ttft"] and the
// table rows.
Status TtftTest(const model::Model& m, const Args& a, std::mt19937* rng, json* out,
                std::string* table) {
  auto tokens = [&](int n) {
    std::vector<int32_t> ids(static_cast<size_t>(n));
    for (auto& t : ids) {
      t = static_cast<int32_t>((*rng)() % static_cast<uint32_t>(m.config().n_vocab));
    }
    return ids;
  };
  const std::vector<int32_t> shared = tokens(a.cached);
  int hit = 0, miss_hit = 0;
  auto with_suffix = [&](int n) {
    std::vector<int32_t> p = shared;
    for (int32_t t : tokens(n)) p.push_back(t);
    return p;
  };
  const std::vector<int32_t> p = with_suffix(a.prompt - a.cached);
  const std::vector<int32_t> warm = with_suffix(a.prompt - a.cached);
  // Each run on a fresh scheduler and executor; only Submit -> first
  // token is timed. One warm-up run each.
  std::vector<double> cold_s, hot_s;
  for (int r = 0; r <= a.reps; ++r) {
    ASSIGN_OR_RETURN(double cold_t, Ttft(m, a, p, {}, /*caching=*/false, &miss_hit));
    if (r > 0) cold_s.push_back(cold_t);
    ASSIGN_OR_RETURN(double hot_t, Ttft(m, a, p, warm, /*caching=*/true, &hit));
    if (r > 0) hot_s.push_back(hot_t);
  }
  const Stat cold = Summarize(cold_s), hot = Summarize(hot_s);
  (*out)["ttft"] = {{"prompt_tokens", a.prompt},
                    {"shared_tokens", a.cached},
                    {"hit_tokens", hit},
                    {"uncached", StatJson(cold)},
                    {"cached", StatJson(hot)},
                    {"speedup", cold.median / hot.median},
                    {"path", "Scheduler + ModelExecutor, f16 KV, KvConfigForBytes(256 MiB)"}};
  *table = StrFormat(
      "| uncached | %d | 0 | %.1f | %.1f-%.1f |\n| cached | %d | %d | %.1f | %.1f-%.1f |\n",
      a.prompt, cold.median * 1e3, cold.min * 1e3, cold.max * 1e3, a.prompt, hit,
      hot.median * 1e3, hot.min * 1e3, hot.max * 1e3);
  return OkStatus();
}

void PrintKvBenchReport(const std::string& cmdline, const KvBenchOptions& o,
                        const model::ModelConfig& c, const std::string& decode_table,
                        const std::string& ttft_table) {
  std::printf("## %s\n\n", cmdline.c_str());
  std::printf("- model: %s (%s)\n- threads: %lld, reps: %lld (median, min-max after 1 "
              "warm-up), ctx %lld, block size %lld\n\n",
              o.model.path.c_str(), c.Summary().c_str(), (long long)o.threads.threads,
              (long long)o.measure.reps, (long long)o.ctx, (long long)o.block_size);
  if (!decode_table.empty()) {
    std::printf("| kv | cache | B | ms/step | min-max | vs contiguous B=1 |\n"
                "|---|---|---|---|---|---|\n%s\n", decode_table.c_str());
  }
  if (!ttft_table.empty()) {
    std::printf("| ttft | prompt | hit tokens | ms | min-max |\n|---|---|---|---|---|\n%s",
                ttft_table.c_str());
  }
}

int RunBenchKv(int argc, char** argv) {
  KvBenchOptions o;
  std::vector<int> batches;
  std::vector<model::KvType> types;
  if (int rc; !ParseKvBenchFlags(argc, argv, &o, &batches, &types, &rc)) return rc;
  auto model_or = model::Model::Load(o.model.path);
  if (!model_or.ok()) return Usage(model_or.status().ToString());
  const model::Model& m = **model_or;
  const model::ModelConfig& c = m.config();
  for (model::KvType t : types) {
    if (Status s = model::CheckKvType(t, c); !s.ok()) return Usage(std::string(s.message()));
  }
  Args a;
  a.threads = static_cast<int>(o.threads.threads);
  a.reps = static_cast<int>(o.measure.reps);
  a.ctx = static_cast<int>(o.ctx);
  a.block_size = static_cast<int>(o.block_size);
  a.prompt = static_cast<int>(o.prompt);
  a.cached = static_cast<int>(o.cached);
  std::mt19937 rng(4321);

  json out;
  out["model"] = o.model.path;
  out["threads"] = o.threads.threads;
  out["reps"] = o.measure.reps;
  out["ctx"] = o.ctx;
  out["block_size"] = o.block_size;
  std::string decode_table;
  json decode = json::array();
  if (!batches.empty()) {
    for (model::KvType t : types) {
      StatusOr<json> j = DecodeCurve(m, a, t, batches, &rng, &decode_table);
      if (!j.ok()) return Fail(j.status());
      decode.push_back(*j);
    }
  }
  out["decode"] = decode;
  std::string ttft_table;
  if (a.prompt > 0) {
    if (Status s = TtftTest(m, a, &rng, &out, &ttft_table); !s.ok()) return Fail(s);
  }
  PrintKvBenchReport(CommandLine(argc, argv), o, c, decode_table, ttft_table);
  if (!o.measure.json_path.empty() && !WriteBenchJson(o.measure.json_path, out, "kv")) return 1;
  return 0;
}

}  // namespace

WEFT_BENCH_VERB("kv", "paged KV: decode step vs batch, TTFT with a prefix hit", RunBenchKv);

}  // namespace weft::apps
