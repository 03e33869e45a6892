// `weft bench serve`: the serving benchmark client (a client of any
// OpenAI-compatible server; see src/loadgen/ and docs/benchmarks).
// `weft bench plot|compare` read its results (bench_results.cc).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/build_info.h"
#include "apps/bench/bench.h"
#include "apps/flags.h"
#include "loadgen/http_client.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"
#include "util/file.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using json = nlohmann::json;
using namespace weft::loadgen;  // NOLINT: one file of glue

template <typename T>
bool ParseList(const std::string& s, std::vector<T>* out) {
  out->clear();
  for (std::string_view part : StrSplit(s, ',')) {
    std::string p(part);
    if (p.empty()) continue;
    char* end = nullptr;
    double v = std::strtod(p.c_str(), &end);
    if (end == p.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0) return false;
    if constexpr (std::is_integral_v<T>) {
      if (v != std::floor(v)) return false;
    }
    out->push_back(static_cast<T>(v));
  }
  return !out->empty();
}

// "ttft=3000,tpot=100" or vLLM's --goodput spelling "ttft:3000 tpot:100"
// (',' or ' ' between, '=' or ':' inside).
bool ParseSlo(std::string s, Slo* slo) {
  std::replace(s.begin(), s.end(), ' ', ',');
  for (std::string_view part : StrSplit(s, ',')) {
    if (part.empty()) continue;
    size_t eq = part.find_first_of("=:");
    if (eq == std::string_view::npos) return false;
    std::string key(part.substr(0, eq)), val(part.substr(eq + 1));
    char* end = nullptr;
    double v = std::strtod(val.c_str(), &end);
    if (end == val.c_str() || *end != '\0' || !(v > 0)) return false;
    if (key == "ttft") {
      slo->ttft_ms = v;
    } else if (key == "tpot") {
      slo->tpot_ms = v;
    } else if (key == "e2e") {
      slo->e2e_ms = v;
    } else {
      return false;
    }
  }
  return true;
}

std::string NowUtc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string CommandLine(int argc, char** argv) {
  std::string out = "weft bench";
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    bool plain = !a.empty() &&
                 a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789-_=.,/:+@") == std::string::npos;
    out += " ";
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

// Model name from GET /v1/models (first entry), or "" when unavailable.
std::string ServedModel(const Endpoint& ep) {
  StatusOr<HttpResponse> r = HttpFetch(ep, "GET", "/v1/models", "", 10);
  if (!r.ok() || r->status != 200) return "";
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty()) {
    return "";
  }
  return j["data"][0].value("id", "");
}

// The flags of `weft bench serve`.
struct ServeBenchOptions {
  // Server base URL (required) and bearer token.
  std::string url;
  std::string api_key;
  // Model name to send; empty = the first of /v1/models.
  std::string model;
  // S1, S2, S3, S4, S6 or a JSONL prompt file.
  std::string workload = "S1";
  // Use /v1/chat/completions (text prompts).
  bool chat = false;
  // Closed-loop ladder (empty = the workload's) and open-loop rates.
  std::string concurrency;
  std::string rates;
  // Open loop gamma shape (1 = Poisson).
  double burstiness = 1;
  // Requests per level (0 = the workload's default) and seconds per level
  // (0 = no limit).
  int64_t num_requests = 0;
  double duration = 0;
  // Warm-up requests before measuring.
  int64_t warmup = 2;
  // Seed of prompts and arrivals.
  int64_t seed = 0;
  // Seconds without progress before a request times out.
  double timeout = 300;
  // Goodput SLO, e.g. ttft=3000,tpot=100 (ms).
  std::string slo;
  // The JSON result file (empty = none) and the run's short name.
  std::string out_path;
  std::string label;
  // Send text prompts fitted with /tokenize instead of token ids.
  bool text_prompts = false;
  // Send ignore_eos and check completion_tokens == max_tokens.
  bool ignore_eos = true;
  // "on" / "off": the requests' "speculative" field; "" = omitted.
  std::string speculative;
  // Progress bar on stderr.
  bool progress = true;
  // Workload overrides; -1 = the workload's own.
  int64_t prompt_tokens = -1;
  int64_t output_tokens = -1;
  int64_t streams = -1;
  double long_every = -1;
  int64_t long_count = -1;
  int64_t long_prompt = -1;
  // Prompt files: max_tokens when a line has none.
  int64_t max_tokens = 128;
};

void RegisterServeBenchFlags(ServeBenchOptions* o, FlagSet* flags) {
  flags->String("url", &o->url, "server base URL, e.g. http://127.0.0.1:8080");
  flags->String("api-key", &o->api_key, "bearer token for the server");
  flags->String("model", &o->model, "model name to send (default: first of /v1/models)");
  flags->String("workload", &o->workload, "S1, S2, S3, S4, S5, S6 or a JSONL prompt file");
  flags->Bool("chat", &o->chat, "use /v1/chat/completions (text prompts)");
  flags->String("concurrency", &o->concurrency,
                "closed-loop ladder, e.g. 1,4,8,16 (S1 default 1,4,8,16; S4 4)");
  flags->String("rate", &o->rates, "open loop: request rate(s) per second, e.g. 0.5,1,2");
  flags->String("request-rate", &o->rates, "the same as --rate (vLLM's name)");
  flags->Double("burstiness", &o->burstiness, "open loop gamma shape (1 = Poisson)");
  flags->Int("num-requests", &o->num_requests,
             "requests per level (default 4*c closed, 100 open, 64 S4)");
  flags->Double("duration", &o->duration, "seconds per level: stop issuing after this");
  flags->Int("warmup", &o->warmup, "warm-up requests before measuring");
  flags->Int("seed", &o->seed, "seed of prompts and arrivals");
  flags->Double("timeout", &o->timeout, "seconds without progress before a request times out");
  flags->String("slo", &o->slo, "goodput SLO, e.g. ttft=3000,tpot=100 (ms)");
  flags->String("goodput", &o->slo,
                "the same as --slo in vLLM's spelling, e.g. ttft:2000,tpot:100 (ms); with "
                "--rate levels the report names the highest rate with 90% of requests in SLO");
  flags->String("out", &o->out_path, "write the JSON result here");
  flags->String("label", &o->label, "short name of this run (plots, compare)");
  flags->Bool("prompt-text", &o->text_prompts,
              "send text prompts fitted with /tokenize instead of token ids");
  flags->Bool("ignore-eos", &o->ignore_eos,
              "send ignore_eos and check completion_tokens == max_tokens");
  flags->String("speculative", &o->speculative,
                "send \"speculative\": true (on) or false (off) with every request; "
                "default: omitted (the server's --spec)");
  flags->Bool("progress", &o->progress, "progress bar on stderr");
  flags->Int("prompt-tokens", &o->prompt_tokens,
             "override the prompt length (S1; S2 streams; S4 user turn)");
  flags->Int("output-tokens", &o->output_tokens, "override max_tokens (S1, S2 streams, S4)");
  flags->Int("max-tokens", &o->max_tokens, "prompt files: max_tokens when a line has none");
  flags->Int("streams", &o->streams, "S2: background streams (default 8)");
  flags->Double("long-every", &o->long_every, "S2: seconds between long prompts (default 10)");
  flags->Int("long-count", &o->long_count, "S2: long prompts per run (default 3)");
  flags->Int("long-prompt-tokens", &o->long_prompt, "S2: long prompt length (default 2048)");
}

// The workload's parameters with the flags' overrides.
WorkloadParams MakeParams(const ServeBenchOptions& o) {
  WorkloadParams params;
  const std::string& w = o.workload;
  if (w == "S1" || w == "S2" || w == "S3" || w == "S4") {
    params = DefaultParams(static_cast<WorkloadKind>(w[1] - '1'));
  } else if (w == "S5") {
    params = DefaultParams(WorkloadKind::kS5);
  } else if (w == "S6") {
    params = DefaultParams(WorkloadKind::kS6);
  } else {
    params.kind = WorkloadKind::kFile;
    params.file = w;
  }
  params.seed = static_cast<uint64_t>(o.seed);
  if (o.prompt_tokens > 0) params.prompt_tokens = o.prompt_tokens;
  if (o.output_tokens > 0) params.output_tokens = o.output_tokens;
  if (o.streams > 0) params.background_streams = o.streams;
  if (o.long_every > 0) params.long_every_s = o.long_every;
  if (o.long_count > 0) params.long_count = o.long_count;
  if (o.long_prompt > 0) params.long_prompt_tokens = o.long_prompt;
  return params;
}

// Distinct prompts to prepare for the run's levels (and sets
// config->num_requests).
int64_t PromptPool(const ServeBenchOptions& o, const WorkloadParams& params, RunConfig* config) {
  int64_t num_requests = o.num_requests;
  if (params.kind == WorkloadKind::kS4 && num_requests == 0 && o.duration == 0) {
    num_requests = params.shared_requests;
  }
  if (!config->rates.empty() && num_requests == 0 && o.duration == 0) num_requests = 100;
  const bool text = o.text_prompts || o.chat;
  int64_t pool = 0;
  if (num_requests > 0) {
    pool = num_requests *
           static_cast<int64_t>(config->rates.empty() ? config->concurrency.size()
                                                      : config->rates.size());
  } else if (o.duration > 0) {
    pool = text ? 256 : 4096;
  } else {
    for (int64_t c : config->concurrency) pool += 4 * c;
  }
  if (params.kind == WorkloadKind::kS2) pool = text ? 128 : 512;
  config->num_requests = num_requests;
  return std::min<int64_t>(pool + config->warmup, 20000);
}

// The run's configuration from the flags: an empty string, or the usage
// error.
std::string BuildRunConfig(const ServeBenchOptions& o, const Endpoint& ep,
                           const WorkloadParams& params, RunConfig* config, Slo* slo) {
  config->endpoint = ep;
  config->chat = o.chat;
  // S5 ends at EOS (its answers copy the passage, then stop).
  config->ignore_eos = o.ignore_eos && params.kind != WorkloadKind::kS5;
  if (o.speculative == "on" || o.speculative == "off") {
    config->speculative = o.speculative == "on";
  } else if (!o.speculative.empty()) {
    return "--speculative must be on or off";
  }
  config->timeout_s = o.timeout;
  config->burstiness = o.burstiness;
  config->duration_s = o.duration;
  config->warmup = std::max<int64_t>(o.warmup, 0);
  config->seed = static_cast<uint64_t>(o.seed);
  config->progress = o.progress;
  if (!(o.timeout > 0) || !(o.burstiness > 0) || o.duration < 0 || o.num_requests < 0) {
    return "--timeout and --burstiness must be positive; --duration and --num-requests not "
           "negative";
  }
  const bool s2 = params.kind == WorkloadKind::kS2;
  std::string ladder = o.concurrency;
  if (ladder.empty()) {
    ladder = params.kind == WorkloadKind::kS4   ? "4"
             : params.kind == WorkloadKind::kS1 ? "1,4,8,16"
             : params.kind == WorkloadKind::kS6 ? "1,4,8"
             : params.kind == WorkloadKind::kS5 ? "1,16"
                                                : "1";
  }
  if (!ParseList(ladder, &config->concurrency)) return "bad --concurrency '" + ladder + "'";
  if (!o.rates.empty() && !ParseList(o.rates, &config->rates)) {
    return "bad --rate '" + o.rates + "'";
  }
  if (params.kind == WorkloadKind::kS3 && config->rates.empty()) {
    return "S3 is an open-loop workload: give --rate (0.25x to 1.5x the S1 capacity)";
  }
  if (s2 && !config->rates.empty()) return "S2 has its own schedule; --rate does not apply";
  if (!ParseSlo(o.slo, slo)) {
    return "bad --slo/--goodput '" + o.slo + "' (want ttft=MS,tpot=MS,e2e=MS or ttft:MS,tpot:MS)";
  }
  if (s2) {
    config->stall_test = true;
    config->background_streams = params.background_streams;
    config->long_every_s = params.long_every_s;
  }
  return "";
}

// The requests: read from the prompt file or built for the workload.
// Returns 0, or the exit code.
int BuildPlan(const ServeBenchOptions& o, const WorkloadParams& params, const Endpoint& ep,
              int64_t pool, RunConfig* config, WorkloadPlan* plan) {
  HttpTokenizer tokenizer(ep, 60);
  if (params.kind != WorkloadKind::kFile) {
    StatusOr<WorkloadPlan> built =
        BuildWorkload(params, &tokenizer, pool, o.text_prompts || o.chat);
    if (!built.ok()) {
      std::fprintf(stderr, "weft bench: building the %s prompts: %s\n",
                   WorkloadName(params.kind), built.status().message().c_str());
      return 1;
    }
    *plan = std::move(*built);
    return 0;
  }
  StatusOr<std::string> text = ReadFileToString(params.file);
  if (!text.ok()) {
    return UsageError(params.file + ": not S1-S6 and " + text.status().message());
  }
  StatusOr<std::vector<PlannedRequest>> reqs = ParsePromptFile(*text, o.max_tokens);
  if (!reqs.ok()) return UsageError(params.file + ": " + reqs.status().message());
  plan->requests = std::move(*reqs);
  for (PlannedRequest& r : plan->requests) {
    if (o.chat && !r.prompt.ids.empty()) return UsageError("--chat needs text prompts in the file");
    if (r.prompt.ids.empty() && !o.chat) {
      StatusOr<std::vector<int32_t>> ids = tokenizer.Tokenize(r.prompt.text);
      if (ids.ok()) r.prompt.tokens = static_cast<int64_t>(ids->size());
    }
  }
  if (o.num_requests == 0 && o.duration == 0 && config->rates.empty()) {
    config->num_requests = static_cast<int64_t>(plan->requests.size());
  }
  return 0;
}

// Weft's effective config, when served (null from other servers).
json FetchEffectiveConfig(const Endpoint& ep) {
  StatusOr<HttpResponse> r = HttpFetch(ep, "GET", "/v1/effective-config", "", 10);
  if (!r.ok() || r->status != 200) return nullptr;
  json j = json::parse(r->body, nullptr, false);
  return !j.is_discarded() && j.is_object() ? j : json(nullptr);
}

// The result's metadata: the command, the server, the workload and the
// run's configuration.
RunMetadata MakeMetadata(const std::string& command_line, const ServeBenchOptions& o,
                         const WorkloadParams& params, const RunConfig& config,
                         json server_config) {
  const bool s2 = params.kind == WorkloadKind::kS2;
  RunMetadata meta;
  meta.command_line = command_line;
  meta.time_utc = NowUtc();
  meta.url = o.url;
  meta.model = config.model;
  meta.label = o.label;
  meta.server = std::move(server_config);
  meta.weft_version = std::string(WEFT_VERSION) + " (" + WEFT_GIT_COMMIT + ")";
  meta.workload = {{"name", WorkloadName(params.kind)}, {"file", params.file},
                   {"seed", params.seed}, {"prompt_tokens", params.prompt_tokens},
                   {"output_tokens", params.output_tokens},
                   {"prompt_mode", o.text_prompts || o.chat ? "text" : "token_ids"}};
  if (params.kind == WorkloadKind::kS3) {
    meta.workload["prompt_range"] = {params.prompt_min, params.prompt_max};
    meta.workload["output_range"] = {params.output_min, params.output_max};
  }
  if (s2) {
    meta.workload["background_streams"] = params.background_streams;
    meta.workload["long_prompt_tokens"] = params.long_prompt_tokens;
    meta.workload["long_output_tokens"] = params.long_output_tokens;
    meta.workload["long_every_s"] = params.long_every_s;
    meta.workload["long_count"] = params.long_count;
  }
  if (params.kind == WorkloadKind::kS4) {
    meta.workload["system_prompts"] = params.system_prompts;
    meta.workload["system_tokens"] = params.system_tokens;
  }
  const json concurrency =
      s2 || !config.rates.empty() ? json(nullptr) : json(config.concurrency);
  meta.config = {{"chat", o.chat}, {"ignore_eos", config.ignore_eos},
                 {"speculative", config.speculative ? json(*config.speculative) : json()},
                 {"concurrency", concurrency}, {"rates", config.rates},
                 {"burstiness", o.burstiness}, {"num_requests", config.num_requests},
                 {"duration_s", o.duration}, {"warmup", config.warmup},
                 {"timeout_s", o.timeout}};
  return meta;
}

// Writes --out, prints the markdown report; the exit code.
int ReportServeBench(const json& doc, const std::string& out_path) {
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    f << doc.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
    if (!f) {
      std::fprintf(stderr, "weft bench: cannot write %s\n", out_path.c_str());
      return 1;
    }
  }
  std::cout << MarkdownReport(doc);
  if (!doc.value("valid", true)) {
    std::fprintf(stderr, "weft bench: INVALID RUN (token count mismatches)\n");
  }
  int64_t completed = 0;
  for (const json& l : doc["levels"]) completed += l["summary"].value("completed", 0);
  if (completed == 0) {
    std::fprintf(stderr, "weft bench: no request completed\n");
    return 1;
  }
  return 0;
}

int RunBenchServe(int argc, char** argv) {
  FlagSet flags("weft bench serve --url URL --workload S1|S2|S3|S4|S5|S6|FILE [flags]",
                "Benchmark an OpenAI-compatible server with streamed requests "
                "(temperature 0, ignore_eos) and report TTFT, ITL, TPOT, E2E, "
                "throughput and goodput.");
  ServeBenchOptions o;
  RegisterServeBenchFlags(&o, &flags);
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty()) return UsageError("unexpected argument '" + args[0] + "'");
  if (o.url.empty()) return UsageError("--url is required");
  StatusOr<Endpoint> ep = ParseUrl(o.url);
  if (!ep.ok()) return UsageError(ep.status().message());
  ep->api_key = o.api_key;

  const WorkloadParams params = MakeParams(o);
  RunConfig config;
  Slo slo;
  if (std::string error = BuildRunConfig(o, *ep, params, &config, &slo); !error.empty()) {
    return UsageError(error);
  }
  const int64_t pool = PromptPool(o, params, &config);
  WorkloadPlan plan;
  if (int rc = BuildPlan(o, params, *ep, pool, &config, &plan); rc != 0) return rc;
  config.model = o.model.empty() ? ServedModel(*ep) : o.model;
  json server_config = FetchEffectiveConfig(*ep);

  StatusOr<RunResult> run = RunBenchmark(config, plan);
  if (!run.ok()) {
    std::fprintf(stderr, "weft bench: %s\n", run.status().message().c_str());
    return 1;
  }
  // The server hashes its model file in the background after start-up: a
  // run that began before the hash was done takes it from a second look.
  if (server_config.is_object() && server_config.contains("model") &&
      server_config["model"].is_object() &&
      server_config["model"].value("sha256", json()).is_null()) {
    json after = FetchEffectiveConfig(*ep);
    if (after.is_object() && after.contains("model") && after["model"].is_object()) {
      server_config["model"]["sha256"] = after["model"].value("sha256", json());
    }
  }
  const RunMetadata meta =
      MakeMetadata(CommandLine(argc, argv), o, params, config, std::move(server_config));
  return ReportServeBench(ResultJson(meta, *run, slo, config.ignore_eos), o.out_path);
}

}  // namespace

WEFT_BENCH_VERB("serve", "benchmark an OpenAI-compatible server (S1-S4, S6, files)", RunBenchServe);

}  // namespace weft::apps
