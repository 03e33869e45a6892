// Internal to src/server: the state HttpServer shares with its connections
// (http_server.cc accepts them, http_session.cc serves each one).
//
// Thread safety: config and handlers are immutable; the counters are atomic;
// the acceptor and retry timer are touched on the acceptor's strand only.
#pragma once

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <cstdint>
#include <optional>

#include "server/api_error.h"
#include "server/http_exchange.h"
#include "server/http_server.h"
#include "server/server_config.h"

namespace weft::server {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

struct HttpServer::Impl {
  Impl(const ServerConfig& c, HttpHandler h, HttpResponseObserver o)
      : config(c),
        handler(std::move(h)),
        own_responses(std::move(o)),
        ioc(std::max(1, c.io_threads)),
        work(net::make_work_guard(ioc)),
        acceptor(net::make_strand(ioc)),
        retry_timer(acceptor.get_executor()) {}

  void DoAccept();
  void OnAccept(beast::error_code ec, tcp::socket socket);

  const ServerConfig config;
  const HttpHandler handler;
  const HttpResponseObserver own_responses;  // may be empty
  net::io_context ioc;  // declared first: destroyed last
  net::executor_work_guard<net::io_context::executor_type> work;
  tcp::acceptor acceptor;
  net::steady_timer retry_timer;
  std::atomic<int64_t> connections{0};
  std::atomic<int64_t> busy{0};        // exchanges with a pending response
};

// Serves one accepted connection until it closes; with `reject` set, writes
// that error and closes instead of reading requests.
void StartSession(tcp::socket socket, HttpServer::Impl* srv,
                  std::optional<ApiError> reject);

}  // namespace weft::server
