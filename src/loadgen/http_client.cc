#include "loadgen/http_client.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <memory>
#include <nlohmann/json.hpp>

#include "util/strings.h"

namespace weft::loadgen {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

StatusOr<Endpoint> ParseUrl(std::string_view url) {
  Endpoint ep;
  constexpr std::string_view kHttp = "http://";
  if (url.substr(0, kHttp.size()) != kHttp) {
    return InvalidArgumentError("the URL must start with http:// (got '" +
                                std::string(url) + "')");
  }
  url.remove_prefix(kHttp.size());
  size_t slash = url.find('/');
  std::string_view hostport = url.substr(0, slash);
  if (slash != std::string_view::npos) {
    ep.prefix = std::string(url.substr(slash));
    while (!ep.prefix.empty() && ep.prefix.back() == '/') ep.prefix.pop_back();
    // A URL ending in /v1 means the API root; routes add /v1 themselves.
    if (ep.prefix.size() >= 3 && ep.prefix.substr(ep.prefix.size() - 3) == "/v1") {
      ep.prefix.resize(ep.prefix.size() - 3);
    }
  }
  if (hostport.empty()) return InvalidArgumentError("the URL has no host");
  size_t colon = hostport.rfind(':');
  if (colon != std::string_view::npos && hostport.find(']') == std::string_view::npos) {
    ep.host = std::string(hostport.substr(0, colon));
    ep.port = std::string(hostport.substr(colon + 1));
  } else {
    ep.host = std::string(hostport);
  }
  if (ep.host.size() > 2 && ep.host.front() == '[') {
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  }
  if (ep.host.empty() || ep.port.empty() ||
      ep.port.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgumentError("bad host or port in the URL");
  }
  return ep;
}

StatusOr<tcp::resolver::results_type> Resolve(asio::io_context& io,
                                              const Endpoint& ep) {
  tcp::resolver resolver(io);
  beast::error_code ec;
  auto results = resolver.resolve(ep.host, ep.port, ec);
  if (ec) {
    return UnavailableError("cannot resolve " + ep.host + ": " + ec.message());
  }
  return results;
}

namespace {

// The completion handler of one step of `call` (the connect's, the
// write's, a read's): keeps the call alive and hands the error code to
// `step`.
template <typename Call>
auto Then(std::shared_ptr<Call> call, void (Call::*step)(beast::error_code)) {
  return [call = std::move(call), step](beast::error_code ec, const auto&) {
    ((*call).*step)(ec);
  };
}

// One request/response exchange. Kept alive by the pending handler.
class HttpCall : public std::enable_shared_from_this<HttpCall> {
 public:
  HttpCall(asio::io_context& io, double timeout_s, HttpCallbacks cb)
      : stream_(io),
        timeout_(std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(timeout_s))),
        cb_(std::move(cb)) {}

  void Start(const tcp::resolver::results_type& addrs, const Endpoint& ep,
             const std::string& method, const std::string& path,
             std::string body) {
    req_.method_string(method);
    req_.target(ep.prefix + path);
    req_.version(11);
    req_.set(http::field::host, ep.host + ":" + ep.port);
    req_.set(http::field::user_agent, "weft-bench");
    req_.set(http::field::accept, "text/event-stream, application/json");
    if (!ep.api_key.empty()) {
      req_.set(http::field::authorization, "Bearer " + ep.api_key);
    }
    if (method == "POST") req_.set(http::field::content_type, "application/json");
    req_.keep_alive(false);
    req_.body() = std::move(body);
    req_.prepare_payload();
    parser_.body_limit(boost::none);
    stream_.expires_after(timeout_);
    stream_.async_connect(addrs,
                          Then(shared_from_this(), &HttpCall::OnConnect));
  }

 private:
  void OnConnect(beast::error_code ec) {
    if (ec) return Error(ec, "connect");
    stream_.expires_after(timeout_);
    http::async_write(stream_, req_,
                      Then(shared_from_this(), &HttpCall::OnWrite));
  }
  void OnWrite(beast::error_code ec) {
    if (ec) return Error(ec, "write");
    stream_.expires_after(timeout_);
    http::async_read_header(stream_, buffer_, parser_,
                            Then(shared_from_this(), &HttpCall::OnHeader));
  }
  void OnHeader(beast::error_code ec) {
    if (ec) return Error(ec, "read header");
    if (cb_.on_status) cb_.on_status(parser_.get().result_int());
    ReadMore();
  }
  void ReadMore() {
    if (parser_.is_done()) return End();
    parser_.get().body().data = buf_;
    parser_.get().body().size = sizeof(buf_);
    stream_.expires_after(timeout_);
    http::async_read_some(stream_, buffer_, parser_,
                          Then(shared_from_this(), &HttpCall::OnRead));
  }
  void OnRead(beast::error_code ec) {
    const Clock::time_point now = Clock::now();
    if (ec == http::error::need_buffer) ec = {};
    const size_t n = sizeof(buf_) - parser_.get().body().size;
    if (n > 0 && cb_.on_body) cb_.on_body(std::string_view(buf_, n), now);
    if (ec) return Error(ec, "read body");
    ReadMore();
  }
  void End() {
    const Clock::time_point now = Clock::now();
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
    if (cb_.on_end) cb_.on_end(now);
  }
  void Error(beast::error_code ec, const char* what) {
    const Clock::time_point now = Clock::now();
    stream_.close();
    FailureKind kind = ec == beast::error::timeout ? FailureKind::kTimeout
                                                   : FailureKind::kConnection;
    if (cb_.on_error) {
      cb_.on_error(kind, std::string(what) + ": " + ec.message(), now);
    }
  }

  beast::tcp_stream stream_;
  Clock::duration timeout_;
  HttpCallbacks cb_;
  http::request<http::string_body> req_;
  beast::flat_buffer buffer_;
  http::response_parser<http::buffer_body> parser_;
  char buf_[16384];
};

}  // namespace

void StartHttpCall(asio::io_context& io,
                   const tcp::resolver::results_type& addrs,
                   const Endpoint& ep, const std::string& method,
                   const std::string& path, std::string body,
                   double idle_timeout_s, HttpCallbacks callbacks) {
  auto call = std::make_shared<HttpCall>(io, idle_timeout_s, std::move(callbacks));
  call->Start(addrs, ep, method, path, std::move(body));
}

StatusOr<HttpResponse> HttpFetch(const Endpoint& ep, const std::string& method,
                                 const std::string& path,
                                 const std::string& body, double timeout_s) {
  asio::io_context io;
  ASSIGN_OR_RETURN(tcp::resolver::results_type addrs, Resolve(io, ep));
  HttpResponse resp;
  std::optional<Status> error;
  HttpCallbacks cb;
  cb.on_status = [&](int s) { resp.status = s; };
  cb.on_body = [&](std::string_view b, Clock::time_point) { resp.body.append(b); };
  cb.on_error = [&](FailureKind, std::string msg, Clock::time_point) {
    error = UnavailableError(StrFormat("%s %s%s:%s%s: %s", method.c_str(),
                                       "http://", ep.host.c_str(),
                                       ep.port.c_str(), path.c_str(),
                                       msg.c_str()));
  };
  StartHttpCall(io, addrs, ep, method, path, body, timeout_s, std::move(cb));
  io.run();
  if (error) return *error;
  return resp;
}

StatusOr<std::vector<int32_t>> HttpTokenizer::Tokenize(const std::string& text) {
  using json = nlohmann::json;
  json body = {{"prompt", text}, {"content", text}, {"add_special", true}};
  ASSIGN_OR_RETURN(HttpResponse r, HttpFetch(ep_, "POST", "/tokenize",
                                             body.dump(), timeout_s_));
  if (r.status != 200) {
    return UnavailableError(StrFormat("POST /tokenize: HTTP %d: %s", r.status,
                                      r.body.substr(0, 200).c_str()));
  }
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("tokens") ||
      !j["tokens"].is_array()) {
    return DataLossError("POST /tokenize: no \"tokens\" list in the answer");
  }
  std::vector<int32_t> ids;
  for (const json& t : j["tokens"]) {
    if (t.is_number_integer()) {
      ids.push_back(t.get<int32_t>());
    } else if (t.is_object() && t.contains("id") && t["id"].is_number_integer()) {
      ids.push_back(t["id"].get<int32_t>());
    } else {
      return DataLossError("POST /tokenize: a token is not an id");
    }
  }
  return ids;
}

}  // namespace weft::loadgen
