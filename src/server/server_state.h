// Internal: state shared by the route handlers of one Server.
//
// Thread safety: config/backend/start times are immutable after
// construction; `calls` is guarded by calls_mu; `gate` by its own mutex;
// metrics are thread-safe; the rest are atomics.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "server/api_error.h"
#include "server/backend.h"
#include "server/http_exchange.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/work_queue.h"

namespace weft::server {

class ApiFormat;

class HttpServer;

// Lets backend threads post into the I/O layer only while it runs.
// Shared by reference count so that late callbacks find it closed, never
// dangling.
class Gate {
 public:
  // Runs fn() under the gate's lock unless closed.
  bool RunIfOpen(const std::function<void()>& fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (!open_) return false;
    fn();
    return true;
  }
  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }

 private:
  std::mutex mu_;
  bool open_ = true;
};

struct ServerState {
  ServerState(ServerConfig c, Backend* b);

  // "cmpl-<24 hex>" style ids.
  std::string NewId(const char* prefix);

  // In-flight generation requests, kept alive here until their backend
  // requests all ended.
  struct CallEntry {
    std::shared_ptr<void> call;
    std::vector<std::string> backend_ids;
  };
  void Register(const std::string& id, CallEntry entry);
  void AddBackendId(const std::string& id, const std::string& backend_id);
  void Unregister(const std::string& id);
  // Drops every call (after the I/O threads stopped).
  void ClearCalls();
  size_t InFlight();
  // Waits until no call is in flight or the deadline passes.
  bool WaitIdle(std::chrono::steady_clock::time_point deadline);
  // Aborts every backend request of every call.
  void AbortAll();

  const ServerConfig config;
  Backend* const backend;
  ServerMetrics metrics;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  // Request preparation (templates, tokenizer), off the I/O threads;
  // stopped (joined) by Server::Stop after the gate closes.
  WorkQueue prepare;
  // Requests posted to `prepare` and not yet back on their strand: at
  // max_queue of them, new requests get 429 (as at max_queue waiting in
  // the backend).
  std::atomic<int64_t> preparing{0};
  HttpServer* http = nullptr;  // set by Server::Start
  std::atomic<bool> draining{false};
  const int64_t start_unix;
  const std::chrono::steady_clock::time_point start;

 private:
  std::mutex calls_mu_;
  std::condition_variable calls_cv_;
  std::map<std::string, CallEntry> calls_;
  std::atomic<uint64_t> counter_{0};
  uint64_t salt_ = 0;
};

// Helpers shared by the routes (server_routes.cc).
void SendJson(ServerState& s, Exchange& ex, int status, std::string body);
void SendError(ServerState& s, Exchange& ex, const ApiError& e);
double SecondsSince(std::chrono::steady_clock::time_point t);
// API-key comparison: time depends only on the lengths, never on where the
// inputs differ.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

// Route handlers; each runs on the connection's strand.
void HandleCompletions(ServerState& s, std::shared_ptr<Exchange> ex,
                       bool chat);
// A chat (or completions) request body run through the one generation
// path, its output written by `format` (null: OpenAI's own shapes).
void RunGeneration(ServerState& s, std::shared_ptr<Exchange> ex, bool chat,
                   std::string_view body, std::unique_ptr<ApiFormat> format);
// POST /v1/messages, /v1/messages/count_tokens, /v1/responses.
void HandleMessages(ServerState& s, const std::shared_ptr<Exchange>& ex);
void HandleCountTokens(ServerState& s, Exchange& ex);
void HandleResponses(ServerState& s, const std::shared_ptr<Exchange>& ex);
void HandleModels(ServerState& s, Exchange& ex);
// GET /v1/models/{model}: the model, or 404 when it is not the one served.
void HandleModel(ServerState& s, Exchange& ex);
void HandleHealth(ServerState& s, Exchange& ex, bool readiness);
void HandleLive(ServerState& s, Exchange& ex);
void HandleTokenize(ServerState& s, Exchange& ex);
void HandleDetokenize(ServerState& s, Exchange& ex);
void HandleMetrics(ServerState& s, Exchange& ex);
void HandleEffectiveConfig(ServerState& s, Exchange& ex);

}  // namespace weft::server
