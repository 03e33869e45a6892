// The server's Prometheus metrics: vLLM's names where the meaning is the
// same (vllm:*, with a model_name label), plus weft_* for the rest.
// Counters follow Prometheus naming (`_total` suffix), as vLLM's
// prometheus_client exposition does.
//
// The series an inference-gateway endpoint picker reads (the Gateway API
// Inference Extension's model-server protocol, llm-d) follow vLLM's
// meaning: vllm:num_requests_waiting / _running, vllm:kv_cache_usage_perc
// (a 0..1 fraction of blocks in use, cached-but-free blocks counting as
// free), vllm:cache_config_info (an info gauge, value 1, whose labels carry
// block_size and num_gpu_blocks) and vllm:lora_requests_info (value: the
// Unix time of the snapshot; labels max_lora, running_lora_adapters and
// waiting_lora_adapters, "0" and empty: Weft serves no adapters).
//
// Thread safety: as MetricsRegistry (any thread).
#pragma once

#include <string>

#include "server/backend.h"
#include "server/metrics.h"

namespace weft::server {

class ServerMetrics {
 public:
  explicit ServerMetrics(const std::string& model_name);

  // One finished sequence (choice).
  void RecordFinish(FinishReason reason);
  // One finished request.
  void RecordRequest(const Usage& usage, double e2e_s);
  void RecordTtft(double s) { ttft_->Observe(s); }
  void RecordItl(double s) { itl_->Observe(s); }
  void RecordQueueTime(double s) { queue_->Observe(s); }
  void RecordHttp(int status);
  void RecordRejected() { rejected_->Inc(); }

  // Refreshes engine-side values, then renders the exposition text.
  // `unix_now`: the wall-clock time stamped on vllm:lora_requests_info.
  std::string Render(const BackendStats& stats, const EngineInfo& engine,
                     int64_t open_connections);
  std::string Render(const BackendStats& stats, const EngineInfo& engine,
                     int64_t open_connections, double unix_now);

  MetricsRegistry& registry() { return registry_; }

 private:
  Labels Model(Labels extra = {}) const;
  // vllm:cache_config_info, once the KV geometry is known.
  void RenderCacheConfig(const BackendStats& stats, const EngineInfo& engine);

  const std::string model_name_;
  MetricsRegistry registry_;
  Histogram* ttft_;
  Histogram* itl_;
  Histogram* e2e_;
  Histogram* queue_;
  Counter* prompt_tokens_;
  Counter* generation_tokens_;
  Counter* rejected_;
};

}  // namespace weft::server
