#include "server/server_metrics.h"

#include <chrono>

namespace weft::server {

namespace {

// Buckets as in vLLM.
const std::vector<double> kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kItlBuckets = {
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kLatencyBuckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,    10.0,  15.0, 20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

const char kCacheConfigHelp[] = "Information of the LLMEngine CacheConfig";
const char kLoraHelp[] = "Running stats on lora requests.";
// No adapters: vLLM's label values for an empty adapter set.
const Labels kNoLora = {{"max_lora", "0"},
                        {"running_lora_adapters", ""},
                        {"waiting_lora_adapters", ""}};

}  // namespace

Labels ServerMetrics::Model(Labels extra) const {
  extra["model_name"] = model_name_;
  return extra;
}

ServerMetrics::ServerMetrics(const std::string& model_name)
    : model_name_(model_name) {
  MetricsRegistry& r = registry_;
  // Registration order = exposition order.
  r.GetGauge("vllm:num_requests_running",
             "Number of requests in model execution batches.", Model());
  r.GetGauge("vllm:num_requests_waiting",
             "Number of requests waiting to be processed.", Model());
  r.GetGauge("vllm:kv_cache_usage_perc",
             "KV-cache usage. 1 means 100 percent usage.", Model());
  r.GetGauge("vllm:lora_requests_info", kLoraHelp, kNoLora);
  r.GetCounter("vllm:prefix_cache_queries_total",
               "Prefix cache queries, in terms of number of queried tokens.",
               Model());
  r.GetCounter("vllm:prefix_cache_hits_total",
               "Prefix cache hits, in terms of number of cached tokens.",
               Model());
  prompt_tokens_ = r.GetCounter("vllm:prompt_tokens_total",
                                "Number of prefill tokens processed.", Model());
  generation_tokens_ =
      r.GetCounter("vllm:generation_tokens_total",
                   "Number of generation tokens processed.", Model());
  for (const char* reason : {"stop", "length", "abort", "error"}) {
    r.GetCounter("vllm:request_success_total",
                 "Count of finished sequences by finish reason.",
                 Model({{"finished_reason", reason}}));
  }
  // The request latency histograms, vLLM's names and buckets.
  const struct {
    Histogram** out;
    const char* name;
    const char* help;
    const std::vector<double>& buckets;
  } histograms[] = {
      {&ttft_, "vllm:time_to_first_token_seconds",
       "Histogram of time to first token in seconds.", kTtftBuckets},
      {&itl_, "vllm:inter_token_latency_seconds",
       "Histogram of inter-token latency in seconds.", kItlBuckets},
      {&e2e_, "vllm:e2e_request_latency_seconds",
       "Histogram of end to end request latency in seconds.", kLatencyBuckets},
      {&queue_, "vllm:request_queue_time_seconds",
       "Histogram of time spent waiting in the queue.", kLatencyBuckets},
  };
  for (const auto& h : histograms) {
    *h.out = r.GetHistogram(h.name, h.help, h.buckets, Model());
  }
  r.GetCounter("weft_engine_steps_total", "Engine passes (forward steps) run.");
  r.GetCounter("weft_engine_step_tokens_total",
               "Tokens processed by engine passes.");
  r.GetCounter("weft_engine_step_token_budget_total",
               "Token budget offered to engine passes (use = tokens/budget).");
  r.GetCounter("weft_preemptions_total", "Sequences preempted by the engine.");
  r.GetCounter("weft_aborts_total", "Requests aborted in the engine.");
  r.GetCounter("weft_admission_rejections_total",
               "Requests refused by the engine's admission control.");
  rejected_ = r.GetCounter("weft_http_queue_full_total",
                           "Requests refused by the server with 429.");
  r.GetGauge("weft_open_connections", "Open HTTP connections.");
  r.GetGauge("weft_kv_blocks_total", "KV cache blocks in the pool.");
  r.GetGauge("weft_kv_blocks_used", "KV cache blocks referenced by sequences.");
  r.GetGauge("weft_kv_blocks_cached",
             "Free KV cache blocks that still hold a reusable prefix.");
}

void ServerMetrics::RecordFinish(FinishReason reason) {
  registry_
      .GetCounter("vllm:request_success_total",
                  "Count of finished sequences by finish reason.",
                  Model({{"finished_reason",
                          std::string(FinishReasonName(reason))}}))
      ->Inc();
}

void ServerMetrics::RecordRequest(const Usage& usage, double e2e_s) {
  prompt_tokens_->Inc(usage.prompt_tokens);
  generation_tokens_->Inc(usage.completion_tokens);
  e2e_->Observe(e2e_s);
  if (usage.queue_seconds) queue_->Observe(*usage.queue_seconds);
}

void ServerMetrics::RecordHttp(int status) {
  registry_
      .GetCounter("weft_http_responses_total",
                  "HTTP responses by status code.",
                  {{"code", std::to_string(status)}})
      ->Inc();
}

void ServerMetrics::RenderCacheConfig(const BackendStats& s,
                                      const EngineInfo& e) {
  if (!s.kv_blocks_total || !e.kv_block_size) return;
  // vLLM's labels are its CacheConfig fields as Python prints them; these
  // are the ones Weft has a true value for. cache_dtype is Weft's own name
  // of the KV row type (f16, f32, q8_0).
  Labels labels = {{"engine", "0"},
                   {"block_size", std::to_string(*e.kv_block_size)},
                   {"num_gpu_blocks", std::to_string(*s.kv_blocks_total)}};
  if (e.kv_type) labels["cache_dtype"] = *e.kv_type;
  if (e.prefix_caching) {
    labels["enable_prefix_caching"] = *e.prefix_caching ? "True" : "False";
  }
  registry_.GetGauge("vllm:cache_config_info", kCacheConfigHelp, labels)
      ->Set(1);
}

std::string ServerMetrics::Render(const BackendStats& s, const EngineInfo& e,
                                  int64_t open_connections) {
  const double now = std::chrono::duration<double>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  return Render(s, e, open_connections, now);
}

std::string ServerMetrics::Render(const BackendStats& s, const EngineInfo& e,
                                  int64_t open_connections, double unix_now) {
  MetricsRegistry& r = registry_;
  RenderCacheConfig(s, e);
  r.GetGauge("vllm:lora_requests_info", "", kNoLora)->Set(unix_now);
  r.GetGauge("vllm:num_requests_running", "", Model())->Set(s.num_running);
  r.GetGauge("vllm:num_requests_waiting", "", Model())->Set(s.num_waiting);
  double usage = 0;
  if (s.kv_blocks_total && *s.kv_blocks_total > 0 && s.kv_blocks_used) {
    usage = static_cast<double>(*s.kv_blocks_used) / *s.kv_blocks_total;
  }
  r.GetGauge("vllm:kv_cache_usage_perc", "", Model())->Set(usage);
  r.GetCounter("vllm:prefix_cache_queries_total", "", Model())
      ->Set(s.prefix_cache_queries);
  r.GetCounter("vllm:prefix_cache_hits_total", "", Model())
      ->Set(s.prefix_cache_hits);
  r.GetCounter("weft_engine_steps_total", "")->Set(s.steps);
  r.GetCounter("weft_engine_step_tokens_total", "")->Set(s.step_tokens);
  r.GetCounter("weft_engine_step_token_budget_total", "")
      ->Set(s.step_token_budget);
  r.GetCounter("weft_preemptions_total", "")->Set(s.preemptions);
  r.GetCounter("weft_aborts_total", "")->Set(s.aborts);
  r.GetCounter("weft_admission_rejections_total", "")
      ->Set(s.admission_rejections);
  if (e.spec_method && *e.spec_method != "off") {
    // vLLM's speculative decoding counters (SpecDecodingProm).
    r.GetCounter("vllm:spec_decode_num_drafts_total",
                 "Number of spec decoding drafts.", Model())
        ->Set(s.spec_num_drafts);
    r.GetCounter("vllm:spec_decode_num_draft_tokens_total",
                 "Number of draft tokens.", Model())
        ->Set(s.spec_num_draft_tokens);
    r.GetCounter("vllm:spec_decode_num_accepted_tokens_total",
                 "Number of accepted tokens.", Model())
        ->Set(s.spec_num_accepted_tokens);
    for (size_t i = 0; i < s.spec_accepted_per_pos.size(); ++i) {
      Labels l = Model();
      l["position"] = std::to_string(i);
      r.GetCounter("vllm:spec_decode_num_accepted_tokens_per_pos",
                   "Accepted tokens per draft position.", l)
          ->Set(static_cast<double>(s.spec_accepted_per_pos[i]));
    }
  }
  r.GetGauge("weft_open_connections", "")->Set(open_connections);
  r.GetGauge("weft_kv_blocks_total", "")->Set(s.kv_blocks_total.value_or(0));
  r.GetGauge("weft_kv_blocks_used", "")->Set(s.kv_blocks_used.value_or(0));
  r.GetGauge("weft_kv_blocks_cached", "")->Set(s.kv_blocks_cached.value_or(0));
  return r.Render();
}

}  // namespace weft::server
