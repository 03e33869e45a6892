// `weft serve [-m MODEL] [--port 8080] ...`: the OpenAI-compatible HTTP
// server over the real engine. Every flag can also come from a WEFT_*
// environment variable (WEFT_PORT, WEFT_KV_MEMORY, ...). Prints
// "listening on http://HOST:PORT" on stderr once it accepts connections;
// SIGTERM/SIGINT stop accepting, drain in-flight requests for up to
// --drain-timeout seconds, and exit 0.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "engine/scheduler_config.h"
#include "model/kv_storage.h"
#include "runtime/engine_builder.h"
#include "server/server.h"
#include "util/file.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

int Fail(int code, const std::string& message) {
  fprintf(stderr, "weft serve: %s\n", message.c_str());
  return code;
}

// The process's resident memory (VmRSS), or 0.
uint64_t ResidentBytes() { return ReadProcKb("/proc/self/status", "VmRSS"); }

bool InRange(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

// The flags of `weft serve`.
struct ServeOptions {
  // -m: the GGUF file.
  ModelFlags model{WEFT_DEFAULT_MODEL};
  // -t: compute threads; 0 = all cores.
  ThreadFlags threads;
  // --kv-type, --kv-memory: the paged KV cache.
  KvFlags kv{"KV cache storage: f16, f32 or q8_0 (q8_0 needs head sizes that are multiples of 32)",
             "KV cache size: bytes (512M, 2G) or a fraction of free memory (0.2)"};
  // Model name reported to clients; empty = the file's stem.
  std::string model_id;
  // Address and port to bind; port 0 = any free port.
  std::string host = "127.0.0.1";
  int64_t port = 8080;
  // Bearer token required on /v1/*; empty = none.
  std::string api_key;
  // Access-Control-Allow-Origin; empty = no CORS.
  std::string cors_origin = server::ServerConfig().cors_origin;
  // Scheduling: engine::SchedulerConfig's defaults (tuned for CPU, see
  // src/engine/scheduler_config.h).
  int64_t max_seqs = engine::SchedulerConfig().max_seqs;
  int64_t max_batched_tokens = engine::SchedulerConfig().max_batched_tokens;
  int64_t prefill_chunk = engine::SchedulerConfig().prefill_chunk;
  // Inter-token latency target of passes with decodes, ms; 0 = off (the
  // fixed budget above). See SchedulerConfig::target_itl_ms.
  double target_itl_ms = 0;
  // Without it: a pass may take this multiple of its decodes' own time;
  // 0 = off. See SchedulerConfig::target_itl_ratio.
  double target_itl_ratio = 0;
  // "fcfs" (priority must be 0) or "priority" (lower runs first).
  std::string scheduling_policy = "fcfs";
  // Waiting requests before 429; 0 = unlimited.
  int64_t max_queue = 256;
  // Context length per sequence; 0 = min(training context, 4096).
  int64_t ctx = 0;
  // Per-request time cap in seconds; 0 = none.
  double max_request_seconds = 0;
  // Most sequences (prompts x n) in one request.
  int64_t max_sequences = 256;
  // Seconds to finish in-flight requests on SIGTERM.
  double drain_timeout = 30.0;
  // Jinja chat template file overriding the model's; empty = none.
  std::string chat_template_path;
  // Include prompt text in request logs.
  bool log_prompts = false;
  // JSON-lines engine trace file; empty = none.
  std::string trace_path;
  // Recompute every prompt instead of reusing cached prefixes.
  bool no_prefix_caching = false;
  // Speculative decoding: "off", "ngram" (prompt lookup) or "draft" (a
  // draft model's greedy guesses). See SchedulerConfig::spec_method.
  std::string spec = "off";
  // Draft tokens per sequence per pass at most.
  int64_t spec_k_max = engine::SchedulerConfig().spec_k_max;
  // Verify every guess up to spec_k_max (no adaptive k).
  bool spec_fixed_k = false;
  // The draft model for --spec draft.
  std::string draft_model;
  // Its KV blocks; 0 = as many as the target's (runtime::EngineConfig).
  int64_t draft_kv_blocks = 0;
};

void RegisterServeFlags(ServeOptions* o, FlagSet* flags) {
  o->model.Register(flags);
  flags->String("model-id", &o->model_id, "model name reported to clients (default: file stem)");
  flags->String("host", &o->host, "address to bind");
  flags->Int("port", &o->port, "port to bind; 0 = any free port", 'p');
  flags->String("api-key", &o->api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  flags->String("cors-origin", &o->cors_origin,
                "Access-Control-Allow-Origin for browsers (\"*\": any page); \"\" = no CORS");
  flags->Int("max-seqs", &o->max_seqs, "sequences generated at once");
  flags->Int("max-batched-tokens", &o->max_batched_tokens, "tokens per engine pass");
  flags->Int("prefill-chunk", &o->prefill_chunk,
             "prompt tokens per sequence per pass; 0 = no cap");
  flags->Double("target-itl-ms", &o->target_itl_ms,
                "size passes with decodes to this inter-token latency (ms) from an online "
                "cost model, prefill taking the rest; 0 = fixed budget");
  flags->Double("target-itl-ratio", &o->target_itl_ratio,
                "without --target-itl-ms: size passes with decodes to this multiple (>= 1) of "
                "their decodes' predicted time alone; 0 = off");
  flags->String("scheduling-policy", &o->scheduling_policy,
                "fcfs (requests with priority != 0 are refused) or priority (lower "
                "'priority' first; preempts the highest value first)");
  o->kv.Register(flags);
  flags->Int("max-queue", &o->max_queue, "waiting requests before 429; 0 = unlimited");
  o->threads.Register(flags);
  flags->Int("ctx", &o->ctx, "context length per sequence; 0 = min(training context, 4096)");
  flags->Double("max-request-seconds", &o->max_request_seconds,
                "abort a generation request after this many seconds (finish_reason "
                "\"abort\"); 0 = no cap");
  flags->Int("max-sequences", &o->max_sequences, "most sequences (prompts x n) in one request");
  flags->Double("drain-timeout", &o->drain_timeout,
                "seconds to finish in-flight requests on SIGTERM");
  flags->String("chat-template", &o->chat_template_path,
                "Jinja chat template file (overrides the model's)");
  flags->Bool("log-prompts", &o->log_prompts, "include prompt text in request logs");
  flags->String("trace", &o->trace_path,
                "write a JSON-lines engine trace (docs/trace.md) to FILE");
  flags->Bool("no-prefix-caching", &o->no_prefix_caching,
              "recompute every prompt instead of reusing cached KV of shared prefixes");
  flags->String("spec", &o->spec,
                "speculative decoding: off, ngram (guesses from the sequence's own prompt and "
                "output, verified in the same pass; k adapts to acceptance and load) or draft");
  flags->Int("spec-k-max", &o->spec_k_max, "draft tokens per sequence per pass at most (1-64)");
  flags->Bool("spec-fixed-k", &o->spec_fixed_k,
              "verify every guess up to --spec-k-max instead of adapting k to acceptance and load "
              "(tests, A/B runs)");
  flags->String("draft-model", &o->draft_model,
                "GGUF draft model for --spec draft (same vocabulary as -m, checked at start)");
  flags->Int("draft-kv-blocks", &o->draft_kv_blocks,
             "KV blocks of the draft model (--spec draft); 0 = as many as the target's");
}

// Checks the values' ranges: an empty string, or the message.
std::string CheckServeOptions(const ServeOptions& o) {
  if (!InRange(o.port, 0, 65535)) return "--port must be in [0, 65535]";
  if (!InRange(o.max_seqs, 1, 4096)) return "--max-seqs must be in [1, 4096]";
  if (!InRange(o.max_batched_tokens, o.max_seqs, 1 << 20)) {
    return "--max-batched-tokens must be in [--max-seqs, 1048576]";
  }
  if (!InRange(o.prefill_chunk, 0, 1 << 20)) return "--prefill-chunk must be in [0, 1048576]";
  if (!InRange(o.max_queue, 0, 1 << 20)) return "--max-queue must be in [0, 1048576]";
  if (!InRange(o.threads.threads, 0, 1024)) return "--threads must be in [0, 1024]";
  if (!InRange(o.ctx, 0, 1 << 24) || o.ctx == 1) return "--ctx must be 0 or in [2, 16777216]";
  if (!(o.drain_timeout >= 0 && o.drain_timeout <= 86400)) {
    return "--drain-timeout must be in [0, 86400] seconds";
  }
  if (!(o.max_request_seconds >= 0 && o.max_request_seconds <= 86400)) {
    return "--max-request-seconds must be in [0, 86400]";
  }
  if (!InRange(o.max_sequences, 1, 1 << 16)) return "--max-sequences must be in [1, 65536]";
  if (!model::ParseKvType(o.kv.type).ok()) {
    return "--kv-type must be f32, f16 or q8_0, not '" + CEscape(o.kv.type) + "'";
  }
  return "";
}

// Parses and checks the flags; false with *rc the exit code when the
// command is done (after --help or on bad usage).
bool ParseServeFlags(int argc, char** argv, ServeOptions* o, int* rc) {
  FlagSet flags("weft serve [-m MODEL] [flags]",
                "Serve a model over an OpenAI-compatible HTTP API. Every flag "
                "can also be set as WEFT_<FLAG> (e.g. WEFT_PORT=9000).");
  flags.SetEnvPrefix("WEFT");
  RegisterServeFlags(o, &flags);
  std::vector<std::string> args;
  if (!flags.Parse(argc, argv, &args, rc)) return false;
  std::string error = args.empty() ? CheckServeOptions(*o)
                                   : "unexpected argument '" + CEscape(args[0]) + "'";
  if (!error.empty()) {
    *rc = Fail(2, error);
    return false;
  }
  return true;
}

// The engine's configuration from the flags (reads --chat-template's file).
// Returns 0, or the exit code.
int BuildEngineConfig(const ServeOptions& o, runtime::EngineConfig* mc) {
  mc->kv_type = o.kv.type;
  std::string error;
  if (!ParseKvMemory(o.kv.memory, &mc->kv_bytes, &error)) return Fail(2, error);
  if (!o.chat_template_path.empty()) {
    StatusOr<std::string> src = ReadFileToString(o.chat_template_path);
    if (!src.ok()) return Fail(2, "--chat-template: " + src.status().message());
    if (src->empty()) return Fail(2, "--chat-template: " + o.chat_template_path + " is empty");
    mc->chat_template = *src;
    mc->chat_template_path = o.chat_template_path;
  }
  mc->model_path = o.model.path;
  mc->trace_path = o.trace_path;
  mc->model_id = o.model_id;
  mc->threads = static_cast<int>(o.threads.threads);
  mc->scheduler.max_seqs = static_cast<int>(o.max_seqs);
  mc->scheduler.max_batched_tokens = static_cast<int>(o.max_batched_tokens);
  mc->scheduler.prefill_chunk = static_cast<int>(o.prefill_chunk);
  if (o.target_itl_ms < 0) return Fail(2, "--target-itl-ms must be >= 0");
  mc->scheduler.target_itl_ms = o.target_itl_ms;
  if (!(o.target_itl_ratio == 0 || o.target_itl_ratio >= 1)) {
    return Fail(2, "--target-itl-ratio must be 0 (off) or >= 1");
  }
  mc->scheduler.target_itl_ratio = o.target_itl_ratio;
  if (o.scheduling_policy == "priority") {
    mc->scheduler.policy = engine::SchedulingPolicy::kPriority;
  } else if (o.scheduling_policy != "fcfs") {
    return Fail(2, "--scheduling-policy must be fcfs or priority, not '" +
                       o.scheduling_policy + "'");
  }
  // The server answers 429 from its own queue count; the engine's queue
  // counts sequences (n per request), so it gets room for max_n each.
  mc->scheduler.max_queue =
      static_cast<int>(o.max_queue > 0 ? std::min<int64_t>(o.max_queue * 16, 1 << 24)
                                       : (1 << 24));
  mc->scheduler.max_model_len = static_cast<int>(o.ctx);
  mc->scheduler.enable_prefix_caching = !o.no_prefix_caching;
  if (o.spec == "ngram") {
    mc->scheduler.spec_method = engine::SpecMethod::kNgram;
  } else if (o.spec == "draft") {
    if (o.draft_model.empty()) return Fail(2, "--spec draft needs --draft-model FILE");
    mc->scheduler.spec_method = engine::SpecMethod::kDraft;
    mc->draft_model_path = o.draft_model;
  } else if (o.spec != "off") {
    return Fail(2, "--spec must be off, ngram or draft, not '" + o.spec + "'");
  }
  if (!o.draft_model.empty() && o.spec != "draft") {
    return Fail(2, "--draft-model is only used with --spec draft");
  }
  if (o.draft_kv_blocks != 0 && o.spec != "draft") {
    return Fail(2, "--draft-kv-blocks is only used with --spec draft");
  }
  if (!InRange(o.draft_kv_blocks, 0, 1 << 24)) {
    return Fail(2, "--draft-kv-blocks must be in [0, 16777216]");
  }
  mc->draft_kv_blocks = static_cast<int>(o.draft_kv_blocks);
  if (o.spec_k_max < 1 || o.spec_k_max > 64) return Fail(2, "--spec-k-max must be in [1, 64]");
  mc->scheduler.spec_k_max = static_cast<int>(o.spec_k_max);
  mc->scheduler.spec_adaptive = !o.spec_fixed_k;
  return 0;
}

// The start-up log: what was loaded, the effective configuration, the KV
// cache's shape.
void LogStartup(const ServeOptions& o, const runtime::EngineConfig& mc,
                const runtime::EngineSummary& summary, double load_seconds) {
  LOG(INFO) << "model " << o.model.path << ": " << summary.model;
  LOG(INFO) << StrFormat(
      "loaded in %.2f s: weights %s (mapped), KV cache %s, resident %s", load_seconds,
      HumanBytes(static_cast<double>(summary.weight_bytes)).c_str(),
      HumanBytes(static_cast<double>(summary.kv_bytes)).c_str(),
      HumanBytes(static_cast<double>(ResidentBytes())).c_str());
  LOG(INFO) << StrFormat(
      "config: host=%s port=%lld max_seqs=%lld max_batched_tokens=%lld "
      "prefill_chunk=%lld ctx=%d max_queue=%lld threads=%lld kv_memory=%s "
      "drain_timeout=%.1fs chat_template=%s api_key=%s log_prompts=%s "
      "prefix_caching=%s",
      o.host.c_str(), (long long)o.port, (long long)o.max_seqs,
      (long long)o.max_batched_tokens, (long long)o.prefill_chunk,
      summary.max_model_len, (long long)o.max_queue, (long long)o.threads.threads,
      o.kv.memory.c_str(), o.drain_timeout, summary.chat_template.c_str(),
      o.api_key.empty() ? "off" : "on", o.log_prompts ? "on" : "off",
      o.no_prefix_caching ? "off" : "on");
  LOG(INFO) << StrFormat(
      "kv cache (%s): %lld blocks + %lld sliding-window blocks of %d tokens "
      "(%lld tokens of full context), %s",
      summary.kv_type.c_str(), (long long)summary.kv_blocks,
      (long long)summary.kv_local_blocks, mc.kv_block_size,
      (long long)(summary.kv_blocks * mc.kv_block_size),
      HumanBytes(static_cast<double>(summary.kv_bytes)).c_str());
  if (!summary.draft_model.empty()) {
    LOG(INFO) << StrFormat("draft model %s: %s; its KV: %lld blocks, %s",
                           mc.draft_model_path.c_str(), summary.draft_model.c_str(),
                           (long long)summary.draft_kv_blocks,
                           HumanBytes(static_cast<double>(summary.draft_kv_bytes)).c_str());
  }
}

// Serves until SIGTERM or SIGINT (blocked in `sigs` by the caller), then
// drains. Returns the exit code.
int ServeUntilSignal(const ServeOptions& o, server::EngineBackend* backend, sigset_t* sigs) {
  server::ServerConfig sc;
  sc.host = o.host;
  sc.port = static_cast<int>(o.port);
  sc.api_key = o.api_key;
  sc.cors_origin = o.cors_origin;
  sc.max_queue = static_cast<int>(o.max_queue);
  sc.drain_timeout_s = o.drain_timeout;
  sc.max_request_seconds = o.max_request_seconds;
  sc.max_sequences = static_cast<int>(o.max_sequences);
  sc.log_prompts = o.log_prompts;
  sc.version = WEFT_VERSION;
  sc.build_commit = WEFT_GIT_COMMIT;
  server::Server srv(sc, backend);
  if (Status s = srv.Start(); !s.ok()) return Fail(1, s.message());
  fprintf(stderr, "weft serve: listening on http://%s:%d\n", o.host.c_str(), srv.port());
  fflush(stderr);

  int sig = 0;
  sigwait(sigs, &sig);
  LOG(INFO) << "got " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << "; draining for up to " << o.drain_timeout << " s";
  backend->StartDraining();
  srv.Drain(std::chrono::steady_clock::now() +
            std::chrono::milliseconds(static_cast<int64_t>(o.drain_timeout * 1000)));
  LOG(INFO) << "stopped";
  return 0;
}

int RunServe(int argc, char** argv) {
  ServeOptions o;
  if (int rc; !ParseServeFlags(argc, argv, &o, &rc)) return rc;
  runtime::EngineConfig mc;
  if (int rc = BuildEngineConfig(o, &mc); rc != 0) return rc;

  // Block the signals before any thread starts, so that every thread
  // inherits the mask and only sigwait sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  LOG(INFO) << "loading " << o.model.path;
  const auto load_start = std::chrono::steady_clock::now();
  runtime::EngineSummary summary;
  StatusOr<std::unique_ptr<server::EngineBackend>> backend =
      runtime::BuildBackend(mc, &summary);
  if (!backend.ok()) {
    const StatusCode c = backend.status().code();
    const std::string msg = backend.status().message();
    const std::string& path = o.model.path;
    return Fail(c == StatusCode::kResourceExhausted || c == StatusCode::kInternal ? 1 : 2,
                msg.find(path) != std::string::npos || msg.starts_with("draft model ")
                    ? msg
                    : path + ": " + msg);
  }
  LogStartup(o, mc, summary,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start)
                 .count());
  return ServeUntilSignal(o, backend->get(), &sigs);
}

}  // namespace

WEFT_COMMAND("serve", "serve a model over an OpenAI-compatible HTTP API",
             RunServe);

}  // namespace weft::apps
