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
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/build_info.h"
#include "apps/command.h"
#include "apps/flag_groups.h"
#include "apps/flags.h"
#include "engine/scheduler_config.h"
#include "model/kv_cache.h"
#include "runtime/engine_builder.h"
#include "server/server.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::apps {
namespace {

int Fail(int code, const std::string& message) {
  fprintf(stderr, "weft serve: %s\n", message.c_str());
  return code;
}

// The process's resident memory (VmRSS), or 0.
uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    unsigned long long kb = 0;
    if (std::sscanf(line.c_str(), "VmRSS: %llu kB", &kb) == 1) {
      return static_cast<uint64_t>(kb) * 1024;
    }
  }
  return 0;
}

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return NotFoundError("cannot open " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool InRange(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

int RunServe(int argc, char** argv) {
  FlagSet flags("weft serve [-m MODEL] [flags]",
                "Serve a model over an OpenAI-compatible HTTP API. Every flag "
                "can also be set as WEFT_<FLAG> (e.g. WEFT_PORT=9000).");
  flags.SetEnvPrefix("WEFT");
  ModelFlags model_flags(WEFT_DEFAULT_MODEL);
  ThreadFlags thread_flags;
  KvFlags kv_flags(
      "KV cache storage: f16, f32 or q8_0 (q8_0 needs head sizes that are multiples of 32)",
      "KV cache size: bytes (512M, 2G) or a fraction of free memory (0.2)");
  std::string host = "127.0.0.1", api_key;
  std::string cors_origin = server::ServerConfig().cors_origin;
  std::string chat_template_path, model_id, trace_path;
  // Scheduling defaults: engine::SchedulerConfig's (tuned for CPU, see
  // src/engine/scheduler_config.h).
  const engine::SchedulerConfig defaults;
  int64_t port = 8080, max_seqs = defaults.max_seqs;
  int64_t max_batched_tokens = defaults.max_batched_tokens;
  int64_t prefill_chunk = defaults.prefill_chunk;
  int64_t max_queue = 256, ctx = 0;
  double drain_timeout = 30.0, max_request_seconds = 0;
  int64_t max_sequences = 256;
  bool log_prompts = false, no_prefix_caching = false;
  model_flags.Register(&flags);
  flags.String("model-id", &model_id, "model name reported to clients (default: file stem)");
  flags.String("host", &host, "address to bind");
  flags.Int("port", &port, "port to bind; 0 = any free port", 'p');
  flags.String("api-key", &api_key, "require 'Authorization: Bearer KEY' on /v1/*");
  flags.String("cors-origin", &cors_origin, "Access-Control-Allow-Origin for browsers (\"*\": any page); \"\" = no CORS");
  flags.Int("max-seqs", &max_seqs, "sequences generated at once");
  flags.Int("max-batched-tokens", &max_batched_tokens, "tokens per engine pass");
  flags.Int("prefill-chunk", &prefill_chunk, "prompt tokens per sequence per pass; 0 = no cap");
  kv_flags.Register(&flags);
  flags.Int("max-queue", &max_queue, "waiting requests before 429; 0 = unlimited");
  thread_flags.Register(&flags);
  flags.Int("ctx", &ctx, "context length per sequence; 0 = min(training context, 4096)");
  flags.Double("max-request-seconds", &max_request_seconds,
               "abort a generation request after this many seconds (finish_reason \"abort\"); 0 = no cap");
  flags.Int("max-sequences", &max_sequences, "most sequences (prompts x n) in one request");
  flags.Double("drain-timeout", &drain_timeout, "seconds to finish in-flight requests on SIGTERM");
  flags.String("chat-template", &chat_template_path, "Jinja chat template file (overrides the model's)");
  flags.Bool("log-prompts", &log_prompts, "include prompt text in request logs");
  flags.String("trace", &trace_path, "write a JSON-lines engine trace (docs/trace.md) to FILE");
  flags.Bool("no-prefix-caching", &no_prefix_caching,
             "recompute every prompt instead of reusing cached KV of shared prefixes");
  std::vector<std::string> args;
  if (int rc; !flags.Parse(argc, argv, &args, &rc)) return rc;
  if (!args.empty()) {
    return Fail(2, "unexpected argument '" + CEscape(args[0]) + "'");
  }
  if (!InRange(port, 0, 65535)) return Fail(2, "--port must be in [0, 65535]");
  if (!InRange(max_seqs, 1, 4096)) return Fail(2, "--max-seqs must be in [1, 4096]");
  if (!InRange(max_batched_tokens, max_seqs, 1 << 20)) {
    return Fail(2, "--max-batched-tokens must be in [--max-seqs, 1048576]");
  }
  if (!InRange(prefill_chunk, 0, 1 << 20)) return Fail(2, "--prefill-chunk must be in [0, 1048576]");
  if (!InRange(max_queue, 0, 1 << 20)) return Fail(2, "--max-queue must be in [0, 1048576]");
  if (!InRange(thread_flags.threads, 0, 1024)) return Fail(2, "--threads must be in [0, 1024]");
  if (!InRange(ctx, 0, 1 << 24) || ctx == 1) return Fail(2, "--ctx must be 0 or in [2, 16777216]");
  if (!(drain_timeout >= 0 && drain_timeout <= 86400)) {
    return Fail(2, "--drain-timeout must be in [0, 86400] seconds");
  }
  if (!(max_request_seconds >= 0 && max_request_seconds <= 86400)) {
    return Fail(2, "--max-request-seconds must be in [0, 86400]");
  }
  if (!InRange(max_sequences, 1, 1 << 16)) {
    return Fail(2, "--max-sequences must be in [1, 65536]");
  }
  if (!model::ParseKvType(kv_flags.type).ok()) {
    return Fail(2, "--kv-type must be f32, f16 or q8_0, not '" + CEscape(kv_flags.type) + "'");
  }
  runtime::EngineConfig mc;
  mc.kv_type = kv_flags.type;
  std::string error;
  if (!ParseKvMemory(kv_flags.memory, &mc.kv_bytes, &error)) return Fail(2, error);
  if (!chat_template_path.empty()) {
    StatusOr<std::string> src = ReadFile(chat_template_path);
    if (!src.ok()) return Fail(2, "--chat-template: " + src.status().message());
    if (src->empty()) return Fail(2, "--chat-template: " + chat_template_path + " is empty");
    mc.chat_template = *src;
    mc.chat_template_path = chat_template_path;
  }
  mc.model_path = model_flags.path;
  mc.trace_path = trace_path;
  mc.model_id = model_id;
  mc.threads = static_cast<int>(thread_flags.threads);
  mc.scheduler.max_seqs = static_cast<int>(max_seqs);
  mc.scheduler.max_batched_tokens = static_cast<int>(max_batched_tokens);
  mc.scheduler.prefill_chunk = static_cast<int>(prefill_chunk);
  // The server answers 429 from its own queue count; the engine's queue
  // counts sequences (n per request), so it gets room for max_n each.
  mc.scheduler.max_queue =
      static_cast<int>(max_queue > 0 ? std::min<int64_t>(max_queue * 16, 1 << 24)
                                     : (1 << 24));
  mc.scheduler.max_model_len = static_cast<int>(ctx);
  mc.scheduler.enable_prefix_caching = !no_prefix_caching;

  // Block the signals before any thread starts, so that every thread
  // inherits the mask and only sigwait below sees them.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);

  LOG(INFO) << "loading " << model_flags.path;
  const auto load_start = std::chrono::steady_clock::now();
  runtime::EngineSummary summary;
  StatusOr<std::unique_ptr<server::EngineBackend>> backend =
      runtime::BuildBackend(mc, &summary);
  if (!backend.ok()) {
    const StatusCode c = backend.status().code();
    const std::string msg = backend.status().message();
    return Fail(c == StatusCode::kResourceExhausted || c == StatusCode::kInternal ? 1 : 2,
                msg.find(model_flags.path) != std::string::npos ? msg : model_flags.path + ": " + msg);
  }
  LOG(INFO) << "model " << model_flags.path << ": " << summary.model;
  LOG(INFO) << StrFormat(
      "loaded in %.2f s: weights %s (mapped), KV cache %s, resident %s",
      std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                    load_start).count(),
      HumanBytes(static_cast<double>(summary.weight_bytes)).c_str(),
      HumanBytes(static_cast<double>(summary.kv_bytes)).c_str(),
      HumanBytes(static_cast<double>(ResidentBytes())).c_str());
  LOG(INFO) << StrFormat(
      "config: host=%s port=%lld max_seqs=%lld max_batched_tokens=%lld "
      "prefill_chunk=%lld ctx=%d max_queue=%lld threads=%lld kv_memory=%s "
      "drain_timeout=%.1fs chat_template=%s api_key=%s log_prompts=%s "
      "prefix_caching=%s",
      host.c_str(), (long long)port, (long long)max_seqs,
      (long long)max_batched_tokens, (long long)prefill_chunk,
      summary.max_model_len, (long long)max_queue, (long long)thread_flags.threads,
      kv_flags.memory.c_str(), drain_timeout, summary.chat_template.c_str(),
      api_key.empty() ? "off" : "on", log_prompts ? "on" : "off",
      no_prefix_caching ? "off" : "on");
  LOG(INFO) << StrFormat(
      "kv cache (%s): %lld blocks + %lld sliding-window blocks of %d tokens "
      "(%lld tokens of full context), %s",
      summary.kv_type.c_str(), (long long)summary.kv_blocks,
      (long long)summary.kv_local_blocks, mc.kv_block_size,
      (long long)(summary.kv_blocks * mc.kv_block_size),
      HumanBytes(static_cast<double>(summary.kv_bytes)).c_str());

  server::ServerConfig sc;
  sc.host = host;
  sc.port = static_cast<int>(port);
  sc.api_key = api_key;
  sc.cors_origin = cors_origin;
  sc.max_queue = static_cast<int>(max_queue);
  sc.drain_timeout_s = drain_timeout;
  sc.max_request_seconds = max_request_seconds;
  sc.max_sequences = static_cast<int>(max_sequences);
  sc.log_prompts = log_prompts;
  sc.version = WEFT_VERSION;
  sc.build_commit = WEFT_GIT_COMMIT;
  server::Server srv(sc, backend->get());
  if (Status s = srv.Start(); !s.ok()) return Fail(1, s.message());
  fprintf(stderr, "weft serve: listening on http://%s:%d\n", host.c_str(),
          srv.port());
  fflush(stderr);

  int sig = 0;
  sigwait(&sigs, &sig);
  LOG(INFO) << "got " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << "; draining for up to " << drain_timeout << " s";
  (*backend)->StartDraining();
  srv.Drain(std::chrono::steady_clock::now() +
            std::chrono::milliseconds(static_cast<int64_t>(drain_timeout * 1000)));
  LOG(INFO) << "stopped";
  return 0;
}

}  // namespace

WEFT_COMMAND("serve", "serve a model over an OpenAI-compatible HTTP API",
             RunServe);

}  // namespace weft::apps
