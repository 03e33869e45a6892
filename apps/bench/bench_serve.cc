// `weft bench serve|plot|compare`: the serving benchmark client (a client
// of any OpenAI-compatible server; see src/loadgen/ and docs/benchmarks).
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/build_info.h"
#include "apps/bench/bench.h"
#include "apps/flags.h"
#include "loadgen/compare.h"
#include "loadgen/http_client.h"
#include "loadgen/plot.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

using json = nlohmann::json;
using namespace weft::loadgen;  // NOLINT: one file of glue

int UsageError(const std::string& msg) {
  std::fprintf(stderr, "weft bench: %s\n", msg.c_str());
  return 2;
}

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

bool ParseSlo(const std::string& s, Slo* slo) {
  for (std::string_view part : StrSplit(s, ',')) {
    if (part.empty()) continue;
    size_t eq = part.find('=');
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
    bool plain = !a.empty() && a.find_first_not_of(
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,/:+@") == std::string::npos;
    out += " ";
    out += plain ? a : "'" + a + "'";
  }
  return out;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

StatusOr<json> ReadResult(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgumentError(path + ": not JSON");
  Status st = ValidateResult(j);
  if (!st.ok()) return InvalidArgumentError(path + ": " + st.message());
  return j;
}

std::string LabelOf(const json& doc, const std::string& path) {
  std::string label = doc["metadata"].value("label", "");
  if (!label.empty()) return label;
  std::string base = path.substr(path.find_last_of('/') + 1);
  if (base.size() > 5 && base.substr(base.size() - 5) == ".json") base.resize(base.size() - 5);
  return base;
}

// Model name from GET /v1/models (first entry), or "" when unavailable.
std::string ServedModel(const Endpoint& ep) {
  StatusOr<HttpResponse> r = HttpFetch(ep, "GET", "/v1/models", "", 10);
  if (!r.ok() || r->status != 200) return "";
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty()) return "";
  return j["data"][0].value("id", "");
}

int RunBenchServe(int argc, char** argv) {
  FlagSet flags("weft bench serve --url URL --workload S1|S2|S3|S4|S6|FILE [flags]",
                "Benchmark an OpenAI-compatible server with streamed requests "
                "(temperature 0, ignore_eos) and report TTFT, ITL, TPOT, E2E, "
                "throughput and goodput.");
  std::string url, api_key, model, workload = "S1", concurrency, rates, slo_text,
              out_path, label;
  bool chat = false, text_prompts = false, ignore_eos = true, progress = true;
  double burstiness = 1, duration = 0, timeout = 300, long_every = -1;
  int64_t num_requests = 0, warmup = 2, seed = 0, prompt_tokens = -1,
          output_tokens = -1, long_count = -1, long_prompt = -1, streams = -1,
          max_tokens = 128;
  flags.String("url", &url, "server base URL, e.g. http://127.0.0.1:8080");
  flags.String("api-key", &api_key, "bearer token for the server");
  flags.String("model", &model, "model name to send (default: first of /v1/models)");
  flags.String("workload", &workload, "S1, S2, S3, S4, S6 or a JSONL prompt file");
  flags.Bool("chat", &chat, "use /v1/chat/completions (text prompts)");
  flags.String("concurrency", &concurrency, "closed-loop ladder, e.g. 1,4,8,16 (S1 default 1,4,8,16; S4 4)");
  flags.String("rate", &rates, "open loop: request rate(s) per second, e.g. 0.5,1,2");
  flags.Double("burstiness", &burstiness, "open loop gamma shape (1 = Poisson)");
  flags.Int("num-requests", &num_requests, "requests per level (default 4*c closed, 100 open, 64 S4)");
  flags.Double("duration", &duration, "seconds per level: stop issuing after this");
  flags.Int("warmup", &warmup, "warm-up requests before measuring");
  flags.Int("seed", &seed, "seed of prompts and arrivals");
  flags.Double("timeout", &timeout, "seconds without progress before a request times out");
  flags.String("slo", &slo_text, "goodput SLO, e.g. ttft=3000,tpot=100 (ms)");
  flags.String("out", &out_path, "write the JSON result here");
  flags.String("label", &label, "short name of this run (plots, compare)");
  flags.Bool("prompt-text", &text_prompts, "send text prompts fitted with /tokenize instead of token ids");
  flags.Bool("ignore-eos", &ignore_eos, "send ignore_eos and check completion_tokens == max_tokens");
  flags.Bool("progress", &progress, "progress bar on stderr");
  flags.Int("prompt-tokens", &prompt_tokens, "override the prompt length (S1; S2 streams; S4 user turn)");
  flags.Int("output-tokens", &output_tokens, "override max_tokens (S1, S2 streams, S4)");
  flags.Int("max-tokens", &max_tokens, "prompt files: max_tokens when a line has none");
  flags.Int("streams", &streams, "S2: background streams (default 8)");
  flags.Double("long-every", &long_every, "S2: seconds between long prompts (default 10)");
  flags.Int("long-count", &long_count, "S2: long prompts per run (default 3)");
  flags.Int("long-prompt-tokens", &long_prompt, "S2: long prompt length (default 2048)");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty()) return UsageError("unexpected argument '" + args[0] + "'");
  if (url.empty()) return UsageError("--url is required");
  StatusOr<Endpoint> ep = ParseUrl(url);
  if (!ep.ok()) return UsageError(ep.status().message());
  ep->api_key = api_key;

  WorkloadParams params;
  if (workload == "S1" || workload == "S2" || workload == "S3" || workload == "S4") {
    params = DefaultParams(static_cast<WorkloadKind>(workload[1] - '1'));
  } else if (workload == "S6") {
    params = DefaultParams(WorkloadKind::kS6);
  } else {
    params.kind = WorkloadKind::kFile;
    params.file = workload;
  }
  params.seed = static_cast<uint64_t>(seed);
  if (prompt_tokens > 0) params.prompt_tokens = prompt_tokens;
  if (output_tokens > 0) params.output_tokens = output_tokens;
  if (streams > 0) params.background_streams = streams;
  if (long_every > 0) params.long_every_s = long_every;
  if (long_count > 0) params.long_count = long_count;
  if (long_prompt > 0) params.long_prompt_tokens = long_prompt;

  RunConfig rc;
  rc.endpoint = *ep;
  rc.chat = chat;
  rc.ignore_eos = ignore_eos;
  rc.timeout_s = timeout;
  rc.burstiness = burstiness;
  rc.duration_s = duration;
  rc.warmup = std::max<int64_t>(warmup, 0);
  rc.seed = static_cast<uint64_t>(seed);
  rc.progress = progress;
  if (!(timeout > 0) || !(burstiness > 0) || duration < 0 || num_requests < 0) {
    return UsageError("--timeout and --burstiness must be positive; --duration and --num-requests not negative");
  }
  const bool s2 = params.kind == WorkloadKind::kS2;
  std::string ladder = concurrency;
  if (ladder.empty()) {
    ladder = params.kind == WorkloadKind::kS4   ? "4"
             : params.kind == WorkloadKind::kS1 ? "1,4,8,16"
             : params.kind == WorkloadKind::kS6 ? "1,4,8"
                                                : "1";
  }
  if (!ParseList(ladder, &rc.concurrency)) return UsageError("bad --concurrency '" + ladder + "'");
  if (!rates.empty() && !ParseList(rates, &rc.rates)) return UsageError("bad --rate '" + rates + "'");
  if (params.kind == WorkloadKind::kS3 && rc.rates.empty()) {
    return UsageError("S3 is an open-loop workload: give --rate (0.25x to 1.5x the S1 capacity)");
  }
  if (s2 && !rc.rates.empty()) return UsageError("S2 has its own schedule; --rate does not apply");
  Slo slo;
  if (!ParseSlo(slo_text, &slo)) return UsageError("bad --slo '" + slo_text + "' (want ttft=MS,tpot=MS,e2e=MS)");
  if (s2) {
    rc.stall_test = true;
    rc.background_streams = params.background_streams;
    rc.long_every_s = params.long_every_s;
  }
  // Requests per level, and so how many distinct prompts to prepare.
  if (params.kind == WorkloadKind::kS4 && num_requests == 0 && duration == 0) {
    num_requests = params.shared_requests;
  }
  if (!rc.rates.empty() && num_requests == 0 && duration == 0) num_requests = 100;
  int64_t pool = 0;
  if (num_requests > 0) {
    pool = num_requests * static_cast<int64_t>(rc.rates.empty() ? rc.concurrency.size() : rc.rates.size());
  } else if (duration > 0) {
    pool = text_prompts || chat ? 256 : 4096;
  } else {
    for (int64_t c : rc.concurrency) pool += 4 * c;
  }
  if (s2) pool = text_prompts || chat ? 128 : 512;
  pool = std::min<int64_t>(pool + rc.warmup, 20000);
  rc.num_requests = num_requests;

  HttpTokenizer tokenizer(*ep, 60);
  WorkloadPlan plan;
  if (params.kind == WorkloadKind::kFile) {
    StatusOr<std::string> text = ReadFile(params.file);
    if (!text.ok()) return UsageError(params.file + ": not S1-S4, S6 and " + text.status().message());
    StatusOr<std::vector<PlannedRequest>> reqs = ParsePromptFile(*text, max_tokens);
    if (!reqs.ok()) return UsageError(params.file + ": " + reqs.status().message());
    plan.requests = std::move(*reqs);
    for (PlannedRequest& r : plan.requests) {
      if (chat && !r.prompt.ids.empty()) return UsageError("--chat needs text prompts in the file");
      if (r.prompt.ids.empty() && !chat) {
        StatusOr<std::vector<int32_t>> ids = tokenizer.Tokenize(r.prompt.text);
        if (ids.ok()) r.prompt.tokens = static_cast<int64_t>(ids->size());
      }
    }
    if (num_requests == 0 && duration == 0 && rc.rates.empty()) {
      rc.num_requests = static_cast<int64_t>(plan.requests.size());
    }
  } else {
    StatusOr<WorkloadPlan> built = BuildWorkload(params, &tokenizer, pool, text_prompts || chat);
    if (!built.ok()) {
      std::fprintf(stderr, "weft bench: building the %s prompts: %s\n",
                   WorkloadName(params.kind), built.status().message().c_str());
      return 1;
    }
    plan = std::move(*built);
  }
  rc.model = model.empty() ? ServedModel(*ep) : model;
  // Weft's effective config, when served (null from other servers).
  auto fetch_config = [&]() -> json {
    StatusOr<HttpResponse> r = HttpFetch(*ep, "GET", "/v1/effective-config", "", 10);
    if (!r.ok() || r->status != 200) return nullptr;
    json j = json::parse(r->body, nullptr, false);
    return !j.is_discarded() && j.is_object() ? j : json(nullptr);
  };
  json server_config = fetch_config();

  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  if (!run.ok()) {
    std::fprintf(stderr, "weft bench: %s\n", run.status().message().c_str());
    return 1;
  }
  // The server hashes its model file in the background after start-up: a
  // run that began before the hash was done takes it from a second look.
  if (server_config.is_object() && server_config.contains("model") &&
      server_config["model"].is_object() && server_config["model"].value("sha256", json()).is_null()) {
    json after = fetch_config();
    if (after.is_object() && after.contains("model") && after["model"].is_object()) {
      server_config["model"]["sha256"] = after["model"].value("sha256", json());
    }
  }
  RunMetadata meta;
  meta.command_line = CommandLine(argc, argv);
  meta.time_utc = NowUtc();
  meta.url = url;
  meta.model = rc.model;
  meta.label = label;
  meta.server = server_config;
  meta.weft_version = std::string(WEFT_VERSION) + " (" + WEFT_GIT_COMMIT + ")";
  meta.workload = {{"name", WorkloadName(params.kind)}, {"file", params.file},
                   {"seed", params.seed}, {"prompt_tokens", params.prompt_tokens},
                   {"output_tokens", params.output_tokens},
                   {"prompt_mode", text_prompts || chat ? "text" : "token_ids"}};
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
  meta.config = {{"chat", chat}, {"ignore_eos", ignore_eos},
                 {"concurrency", s2 || !rc.rates.empty() ? json(nullptr) : json(rc.concurrency)},
                 {"rates", rc.rates}, {"burstiness", burstiness},
                 {"num_requests", rc.num_requests}, {"duration_s", duration},
                 {"warmup", rc.warmup}, {"timeout_s", timeout}};
  json doc = ResultJson(meta, *run, slo, ignore_eos);
  if (!out_path.empty()) {
    std::ofstream f(out_path);
    f << doc.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
    if (!f) {
      std::fprintf(stderr, "weft bench: cannot write %s\n", out_path.c_str());
      return 1;
    }
  }
  std::cout << MarkdownReport(doc);
  if (!doc.value("valid", true)) std::fprintf(stderr, "weft bench: INVALID RUN (token count mismatches)\n");
  int64_t completed = 0;
  for (const json& l : doc["levels"]) completed += l["summary"].value("completed", 0);
  if (completed == 0) {
    std::fprintf(stderr, "weft bench: no request completed\n");
    return 1;
  }
  return 0;
}

int RunBenchPlot(int argc, char** argv) {
  FlagSet flags("weft bench plot RESULT.json... -o FILE.svg",
                "Plot TTFT and ITL CDFs and throughput (or goodput) curves of "
                "one or more `weft bench serve` results into one SVG.");
  std::string out_path, labels;
  flags.String("out", &out_path, "SVG file to write", 'o');
  flags.String("labels", &labels, "comma-separated legend names (default: labels or file names)");
  std::vector<std::string> files;
  if (int rc; !flags.Parse(argc, argv, &files, &rc)) return rc;
  if (files.empty()) return UsageError("plot needs at least one RESULT.json");
  if (out_path.empty()) return UsageError("plot needs -o FILE.svg");
  std::vector<std::string_view> names = StrSplit(labels, ',');
  std::vector<PlotRun> runs;
  for (size_t i = 0; i < files.size(); ++i) {
    StatusOr<json> doc = ReadResult(files[i]);
    if (!doc.ok()) return UsageError(doc.status().message());
    std::string name = !labels.empty() && i < names.size() ? std::string(names[i]) : LabelOf(*doc, files[i]);
    runs.push_back({name, std::move(*doc)});
  }
  StatusOr<std::string> svg = PlotSvg(runs);
  if (!svg.ok()) return UsageError(svg.status().message());
  std::ofstream f(out_path);
  f << *svg;
  if (!f) {
    std::fprintf(stderr, "weft bench: cannot write %s\n", out_path.c_str());
    return 1;
  }
  return 0;
}

int RunBenchCompare(int argc, char** argv) {
  FlagSet flags("weft bench compare A.json B.json",
                "Ratios B/A of the headline metrics of two `weft bench serve` "
                "results, per level present in both, as a markdown table.");
  std::vector<std::string> files;
  if (int rc; !flags.Parse(argc, argv, &files, &rc)) return rc;
  if (files.size() != 2) return UsageError("compare needs exactly two result files");
  StatusOr<json> a = ReadResult(files[0]);
  if (!a.ok()) return UsageError(a.status().message());
  StatusOr<json> b = ReadResult(files[1]);
  if (!b.ok()) return UsageError(b.status().message());
  StatusOr<std::string> table = CompareReport(*a, *b, LabelOf(*a, files[0]), LabelOf(*b, files[1]));
  if (!table.ok()) return UsageError(table.status().message());
  std::cout << *table;
  return 0;
}

}  // namespace

WEFT_BENCH_VERB("serve", "benchmark an OpenAI-compatible server (S1-S4, S6, files)", RunBenchServe);
WEFT_BENCH_VERB("plot", "SVG of latency CDFs and throughput curves", RunBenchPlot);
WEFT_BENCH_VERB("compare", "B/A ratios of two serve results", RunBenchCompare);

}  // namespace weft::apps
