#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/http_server_impl.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {

namespace http = beast::http;

namespace {

std::chrono::milliseconds Ms(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string StatusLine(int status) {
  std::string_view reason = http::obsolete_reason(http::int_to_status(status));
  if (reason.empty()) reason = "Unknown";
  return StrFormat("HTTP/1.1 %d %.*s\r\n", status,
                   static_cast<int>(reason.size()), reason.data());
}

// One TCP connection: reads requests one after another, hands each to the
// handler, and writes the response (complete or chunked). All members are
// touched only on the connection's strand.
class Session : public Exchange, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, HttpServer::Impl* srv)
      : stream_(std::move(socket)), srv_(srv), cfg_(srv->config) {
    srv_->connections++;
    beast::error_code ec;
    // A stream is many small writes (headers, then one SSE chunk per
    // token). With Nagle's algorithm a chunk written while the previous
    // write is unacknowledged waits for the peer's delayed ACK (up to
    // 40 ms), which on a kept-alive connection (a proxy's) delays the first
    // token by tens of milliseconds.
    stream_.socket().set_option(tcp::no_delay(true), ec);
    auto ep = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = ep.address().to_string() + ":" + std::to_string(ep.port());
  }
  ~Session() override {
    SetBusy(false);
    srv_->connections--;
  }

  void Start(std::optional<ApiError> reject) {
    net::dispatch(stream_.get_executor(),
                  [self = shared_from_this(), reject] {
                    if (reject) {
                      self->RejectAndClose(*reject);
                    } else {
                      self->ReadRequest();
                    }
                  });
  }

  // Exchange:
  const HttpRequest& request() const override { return req_; }

  void Respond(int status, const std::string& content_type, std::string body,
               const HeaderList& headers) override {
    if (client_gone_ || response_started_) return;
    response_started_ = response_complete_ = true;
    std::string out = StatusLine(status);
    if (status != 204) {  // a 204 has no content (RFC 9110 8.6, 15.3.5)
      out += "Content-Type: " + content_type + "\r\n";
      out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
    }
    out += CommonHeaders(headers) + "\r\n";
    if (status != 204) out += body;
    Queue(std::move(out));
  }

  void StartStream(int status, const std::string& content_type,
                   const HeaderList& headers) override {
    if (client_gone_ || response_started_) return;
    response_started_ = true;
    std::string out = StatusLine(status);
    out += "Content-Type: " + content_type + "\r\n";
    out += "Cache-Control: no-cache\r\n";
    // HTTP/1.0 has no chunked coding (RFC 9112 6.1): the body runs to the
    // connection's close.
    chunked_ = !http10_;
    if (chunked_) {
      out += "Transfer-Encoding: chunked\r\n";
    } else {
      keep_alive_ = false;
    }
    out += CommonHeaders(headers) + "\r\n";
    Queue(std::move(out));
  }

  void Write(std::string data) override {
    if (client_gone_ || !response_started_ || response_complete_ ||
        data.empty()) {
      return;
    }
    if (!chunked_) return Queue(std::move(data));
    Queue(StrFormat("%zx\r\n", data.size()) + data + "\r\n");
  }

  void End() override {
    if (client_gone_ || !response_started_ || response_complete_) return;
    response_complete_ = true;
    if (chunked_) return Queue("0\r\n\r\n");
    DoWrite();  // closes the connection once the queue is written
  }

  void Post(std::function<void()> fn) override {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), fn = std::move(fn)] { fn(); });
  }
  void SetOnClientGone(std::function<void()> fn) override {
    on_gone_ = std::move(fn);
  }
  bool client_gone() const override { return client_gone_; }
  void SetTimeout(double seconds, std::function<void()> fn) override {
    if (client_gone_ || response_complete_) return;
    deadline_.expires_after(Ms(seconds));
    deadline_.async_wait([self = shared_from_this(), fn = std::move(fn),
                          seq = request_seq_](beast::error_code ec) {
      if (ec || self->request_seq_ != seq || self->client_gone_ ||
          self->response_complete_) {
        return;
      }
      fn();
    });
  }

 private:
  std::string CommonHeaders(const HeaderList& headers) {
    std::string out = "Server: weft\r\n";
    out += keep_alive_ ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
    if (!cfg_.cors_origin.empty() && !req_.Header("origin").empty()) {
      out += "Access-Control-Allow-Origin: " + cfg_.cors_origin + "\r\n";
      if (cfg_.cors_origin != "*") out += "Vary: Origin\r\n";
    }
    for (const auto& [k, v] : headers) out += k + ": " + v + "\r\n";
    return out;
  }

  void ReadRequest() {
    if (client_gone_) return;
    parser_.emplace();
    parser_->header_limit(cfg_.max_header_bytes);
    parser_->body_limit(cfg_.max_body_bytes);
    stream_.expires_after(
        Ms(first_request_ ? cfg_.header_read_timeout_s : cfg_.idle_timeout_s));
    http::async_read_header(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&Session::OnHeader, shared_from_this()));
  }

  void OnHeader(beast::error_code ec, size_t) {
    if (ec) return FailRead(ec);
    auto len = parser_->content_length();
    if (len && *len > cfg_.max_body_bytes) {
      return RejectAndClose(PayloadTooLarge(StrFormat(
          "request body of %llu bytes is over the limit of %llu bytes",
          (unsigned long long)*len, (unsigned long long)cfg_.max_body_bytes)));
    }
    if (beast::iequals(parser_->get()[http::field::expect], "100-continue")) {
      static const std::string kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      stream_.expires_after(Ms(cfg_.header_read_timeout_s));
      net::async_write(stream_, net::buffer(kContinue),
                       [self = shared_from_this()](beast::error_code e, size_t) {
                         if (e) return self->Close();
                         self->ReadBody();
                       });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    stream_.expires_after(Ms(cfg_.header_read_timeout_s));
    http::async_read(
        stream_, buffer_, *parser_,
        beast::bind_front_handler(&Session::OnBody, shared_from_this()));
  }

  void OnBody(beast::error_code ec, size_t) {
    if (ec) return FailRead(ec);
    stream_.expires_never();
    first_request_ = false;
    auto& msg = parser_->get();
    req_ = HttpRequest();
    req_.method = std::string(msg.method_string());
    std::string target(msg.target());
    size_t q = target.find('?');
    req_.path = target.substr(0, q);
    if (q != std::string::npos) req_.query = target.substr(q + 1);
    for (const auto& field : msg) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      std::string& v = req_.headers[name];
      if (!v.empty()) v += ", ";
      v += std::string(field.value());
    }
    req_.body = std::move(msg.body());
    req_.remote = remote_;
    keep_alive_ = msg.keep_alive();
    http10_ = msg.version() < 11;
    response_started_ = response_complete_ = after_response_ = false;
    on_gone_ = nullptr;
    ++request_seq_;
    SetBusy(true);
    StartMonitor();
    try {
      srv_->handler(shared_from_this());
    } catch (const std::exception& e) {
      LOG(ERROR) << "handler threw: " << e.what();
      if (!response_started_) {
        NoteOwnResponse(500);
        Respond(500, "application/json",
                InternalServerError("internal error").ToJson(), {});
      }
      if (!response_complete_) End();
    }
  }

  void FailRead(beast::error_code ec) {
    if (ec == http::error::header_limit) {
      return RejectAndClose(BadRequestWithStatus(
          431, "request headers are over the size limit"));
    }
    if (ec == http::error::body_limit) {
      return RejectAndClose(PayloadTooLarge(StrFormat(
          "request body is over the limit of %llu bytes",
          (unsigned long long)cfg_.max_body_bytes)));
    }
    if (ec.category() ==
            http::make_error_code(http::error::end_of_stream).category() &&
        ec != http::error::end_of_stream && ec != http::error::partial_message) {
      return RejectAndClose(BadRequest("malformed HTTP request"));
    }
    Close();  // EOF, timeout, reset
  }

  static ApiError BadRequestWithStatus(int status, std::string message) {
    ApiError e = BadRequest(std::move(message));
    e.http_status = status;
    return e;
  }

  void RejectAndClose(const ApiError& e) {
    keep_alive_ = false;
    response_started_ = false;
    HeaderList h;
    if (e.http_status == 503 || e.http_status == 429) {
      h.emplace_back("Retry-After", std::to_string(cfg_.retry_after_s));
    }
    NoteOwnResponse(e.http_status);
    Respond(e.http_status, "application/json", e.ToJson(), h);
  }

  // Before Respond (whose write may reach the client before it returns, and
  // a next request read the counts): reports the status if the response
  // will go out (Respond skips a client already gone).
  void NoteOwnResponse(int status) {
    if (!client_gone_ && !response_started_ && srv_->own_responses) {
      srv_->own_responses(status);
    }
  }

  // Watches the socket while a request is pending: EOF or an error means
  // the client went away. Pipelined bytes are kept in buffer_.
  void StartMonitor() {
    if (monitor_pending_ || client_gone_) return;
    monitor_pending_ = true;
    stream_.async_read_some(
        buffer_.prepare(4096),
        beast::bind_front_handler(&Session::OnMonitor, shared_from_this()));
  }

  void OnMonitor(beast::error_code ec, size_t n) {
    monitor_pending_ = false;
    if (!ec) {
      buffer_.commit(n);
      if (!response_complete_ && buffer_.size() < 65536) return StartMonitor();
      if (awaiting_monitor_) {
        awaiting_monitor_ = false;
        ReadRequest();
      }
      return;
    }
    if (ec == net::error::operation_aborted && awaiting_monitor_) {
      awaiting_monitor_ = false;
      return ReadRequest();
    }
    ClientGone();
  }

  void SetBusy(bool busy) {
    if (busy == busy_) return;
    busy_ = busy;
    if (busy) {
      srv_->busy++;
    } else {
      srv_->busy--;
    }
  }

  void ClientGone() {
    if (client_gone_) return;
    client_gone_ = true;
    SetBusy(false);
    if (!response_complete_ && on_gone_) {
      auto fn = std::move(on_gone_);
      on_gone_ = nullptr;
      fn();
    }
    Close();
  }

  void Close() {
    deadline_.cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  void Queue(std::string data) {
    outq_.push_back(std::move(data));
    DoWrite();
  }

  void DoWrite() {
    if (writing_ || client_gone_) return;
    if (outq_.empty()) {
      if (response_complete_ && !after_response_) AfterResponse();
      return;
    }
    writing_ = true;
    stream_.expires_after(Ms(cfg_.idle_timeout_s));  // slow-reader guard
    net::async_write(
        stream_, net::buffer(outq_.front()),
        beast::bind_front_handler(&Session::OnWrite, shared_from_this()));
  }

  void OnWrite(beast::error_code ec, size_t) {
    writing_ = false;
    if (ec) {
      outq_.clear();
      return ClientGone();
    }
    outq_.pop_front();
    DoWrite();
  }

  void AfterResponse() {
    after_response_ = true;
    deadline_.cancel();
    SetBusy(false);
    if (!keep_alive_) {
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
      client_gone_ = true;  // no more output
      stream_.close();
      return;
    }
    if (monitor_pending_) {
      awaiting_monitor_ = true;
      beast::error_code ec;
      stream_.socket().cancel(ec);
      return;
    }
    ReadRequest();
  }

  beast::tcp_stream stream_;
  net::steady_timer deadline_{stream_.get_executor()};  // SetTimeout
  uint64_t request_seq_ = 0;  // requests read so far (stale timer guard)
  HttpServer::Impl* srv_;
  const ServerConfig& cfg_;
  std::string remote_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  HttpRequest req_;
  bool first_request_ = true;
  bool keep_alive_ = true;
  bool http10_ = false;   // the request is HTTP/1.0
  bool chunked_ = true;   // the streamed body uses chunked coding
  bool response_started_ = false;
  bool response_complete_ = false;  // every byte queued
  bool after_response_ = false;
  std::atomic<bool> client_gone_{false};  // written on the strand only
  bool monitor_pending_ = false;
  bool awaiting_monitor_ = false;  // next read waits for the monitor
  bool writing_ = false;
  bool busy_ = false;  // counted in srv_->busy
  std::deque<std::string> outq_;
  std::function<void()> on_gone_;
};

}  // namespace

void StartSession(tcp::socket socket, HttpServer::Impl* srv,
                  std::optional<ApiError> reject) {
  std::make_shared<Session>(std::move(socket), srv)->Start(std::move(reject));
}

}  // namespace weft::server
