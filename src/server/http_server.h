// Asynchronous HTTP/1.1 server on Boost.Beast: a small pool of io_context
// threads serves every connection (idle and streaming connections cost no
// thread). Keep-alive, header/body size limits (431/413), header-read and
// idle timeouts, a connection cap (503), and client-disconnect detection
// while a request is pending (a read that completes with EOF).
//
// Thread safety: Start/StopAccepting/Stop may be called from any one
// controlling thread. Handlers run on per-connection strands.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "server/http_exchange.h"
#include "server/server_config.h"
#include "util/status.h"

namespace weft::server {

class HttpServer {
 public:
  // own_responses (may be empty) sees the responses written without the
  // handler, for the server's response counts.
  HttpServer(const ServerConfig& config, HttpHandler handler,
             HttpResponseObserver own_responses = nullptr);
  ~HttpServer();  // Stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads.
  Status Start();
  // The bound port (after Start).
  int port() const { return port_; }
  // Closes the listening socket; open connections continue.
  void StopAccepting();
  // Closes everything and joins the I/O threads. Idempotent.
  void Stop();

  int64_t open_connections() const;
  // Requests read but whose response is not fully written yet.
  int64_t busy_exchanges() const;
  // Waits until busy_exchanges() == 0 or the deadline; returns whether idle.
  bool WaitResponsesWritten(std::chrono::steady_clock::time_point deadline);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::vector<std::thread> threads_;
  int port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace weft::server
