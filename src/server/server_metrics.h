// The server's Prometheus metrics: vLLM's names where the meaning is the
// same (vllm:*, with a model_name label), plus weft_* for the rest.
// Counters follow Prometheus naming (`_total` suffix), as vLLM's
// prometheus_client exposition does.
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
  std::string Render(const BackendStats& stats, int64_t open_connections);

  MetricsRegistry& registry() { return registry_; }

 private:
  Labels Model(Labels extra = {}) const;

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
