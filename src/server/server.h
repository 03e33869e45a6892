// The OpenAI-compatible HTTP server. Talks to a Backend (the engine, or a
// fake in tests) through plain structs; all JSON stays in this folder.
//
// Routes: POST /v1/completions, POST /v1/chat/completions (JSON or SSE),
// GET /v1/models, GET /health, /health/live, /health/ready, POST /tokenize,
// POST /detokenize, GET /metrics (Prometheus), GET /v1/effective-config.
// With an api_key set, /v1/*, /tokenize and /detokenize need
// "Authorization: Bearer <key>"; health and metrics stay open.
//
// Thread safety: Start, Drain and Stop are called from one controlling
// thread; requests are served on the I/O thread pool. The backend must
// outlive the Server.
#pragma once

#include <chrono>
#include <memory>

#include "server/backend.h"
#include "server/server_config.h"
#include "util/status.h"

namespace weft::server {

struct ServerState;
class HttpServer;

class Server {
 public:
  Server(ServerConfig config, Backend* backend);
  ~Server();  // Stop()s
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds and starts serving. With config.port == 0, port() tells which.
  Status Start();
  int port() const;

  // Graceful shutdown: stop accepting, report not-ready (503), let
  // in-flight requests finish until `deadline`, then abort the rest and
  // Stop(). Blocks until done.
  void Drain(std::chrono::steady_clock::time_point deadline);
  // Aborts in-flight requests, closes every connection, joins threads.
  void Stop();

  // Generation requests in flight (for tests and drain).
  size_t in_flight() const;

 private:
  std::unique_ptr<ServerState> state_;
  std::unique_ptr<HttpServer> http_;
  bool stopped_ = false;
};

}  // namespace weft::server
