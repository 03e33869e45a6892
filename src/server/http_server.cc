#include "server/http_server.h"

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <chrono>
#include <optional>
#include <thread>

#include "server/api_error.h"
#include "server/http_server_impl.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {

void HttpServer::Impl::DoAccept() {
  acceptor.async_accept(
      net::make_strand(ioc),
      [this](beast::error_code ec, tcp::socket socket) {
        OnAccept(ec, std::move(socket));
      });
}

void HttpServer::Impl::OnAccept(beast::error_code ec, tcp::socket socket) {
  if (!acceptor.is_open() || ec == net::error::operation_aborted) return;
  if (ec) {
    LOG(WARNING) << "accept failed: " << ec.message();
    retry_timer.expires_after(std::chrono::milliseconds(50));
    retry_timer.async_wait([this](beast::error_code e) {
      if (!e && acceptor.is_open()) DoAccept();
    });
    return;
  }
  std::optional<ApiError> reject;
  if (connections.load() >= config.max_connections) {
    reject = Unavailable("too many open connections");
  }
  StartSession(std::move(socket), this, std::move(reject));
  DoAccept();
}

HttpServer::HttpServer(const ServerConfig& config, HttpHandler handler,
                       HttpResponseObserver own_responses)
    : impl_(std::make_unique<Impl>(config, std::move(handler),
                                   std::move(own_responses))) {}

HttpServer::~HttpServer() { Stop(); }

Status HttpServer::Start() {
  CHECK(!started_);
  beast::error_code ec;
  auto address = net::ip::make_address(impl_->config.host, ec);
  if (ec) return InvalidArgumentError("bad host address: " + impl_->config.host);
  if (impl_->config.port < 0 || impl_->config.port > 65535) {
    return InvalidArgumentError("bad port");
  }
  tcp::endpoint ep(address, static_cast<uint16_t>(impl_->config.port));
  tcp::acceptor& a = impl_->acceptor;
  a.open(ep.protocol(), ec);
  if (!ec) a.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) a.bind(ep, ec);
  if (!ec) a.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return UnavailableError(StrFormat("cannot listen on %s:%d: %s",
                                      impl_->config.host.c_str(),
                                      impl_->config.port, ec.message().c_str()));
  }
  port_ = a.local_endpoint().port();
  started_ = true;
  impl_->DoAccept();
  for (int i = 0; i < std::max(1, impl_->config.io_threads); ++i) {
    threads_.emplace_back([this] { impl_->ioc.run(); });
  }
  return OkStatus();
}

void HttpServer::StopAccepting() {
  if (!started_) return;
  Impl* impl = impl_.get();
  net::post(impl->acceptor.get_executor(), [impl] {
    beast::error_code ec;
    impl->acceptor.close(ec);
    impl->retry_timer.cancel();
  });
}

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  StopAccepting();
  impl_->work.reset();
  impl_->ioc.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

int64_t HttpServer::busy_exchanges() const { return impl_->busy.load(); }

bool HttpServer::WaitResponsesWritten(
    std::chrono::steady_clock::time_point deadline) {
  while (impl_->busy.load() > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int64_t HttpServer::open_connections() const {
  return impl_->connections.load();
}

}  // namespace weft::server
