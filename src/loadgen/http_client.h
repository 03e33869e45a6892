// A small asynchronous HTTP/1.1 client on Boost.Beast for the benchmark:
// one connection per request, the response body delivered piece by piece
// with the steady_clock time at which the bytes arrived.
//
// Thread safety: StartHttpCall must be called on the io_context's thread
// (or before it runs); all callbacks run on that thread.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "loadgen/stream.h"
#include "loadgen/workload.h"
#include "util/status.h"

namespace weft::loadgen {

using Clock = std::chrono::steady_clock;

// Where the server is: "http://host:port[/prefix]".
struct Endpoint {
  std::string host = "127.0.0.1";  // name or address
  std::string port = "80";         // service
  std::string prefix;              // path prefix, no trailing '/'
  std::string api_key;             // "Authorization: Bearer" when set
};
StatusOr<Endpoint> ParseUrl(std::string_view url);

struct HttpCallbacks {
  std::function<void(int status)> on_status;  // after the headers
  std::function<void(std::string_view bytes, Clock::time_point at)> on_body;
  std::function<void(Clock::time_point at)> on_end;  // body complete
  // Transport failure (connect/read/write or the idle timeout).
  std::function<void(FailureKind kind, std::string message,
                     Clock::time_point at)> on_error;
};

// Starts `method path` with a JSON body. `idle_timeout_s`: the longest
// wait for any single step (connect, write, next bytes). Exactly one of
// on_end / on_error is called at the end.
void StartHttpCall(boost::asio::io_context& io,
                   const boost::asio::ip::tcp::resolver::results_type& addrs,
                   const Endpoint& ep, const std::string& method,
                   const std::string& path, std::string body,
                   double idle_timeout_s, HttpCallbacks callbacks);

struct HttpResponse {
  int status = 0;
  std::string body;
};
// A blocking request (for set-up: /tokenize, /v1/models) on its own
// io_context. Transport failures are Unavailable.
StatusOr<HttpResponse> HttpFetch(const Endpoint& ep, const std::string& method,
                                 const std::string& path,
                                 const std::string& body, double timeout_s);

// Resolves the endpoint's host once (the benchmark reuses the result).
StatusOr<boost::asio::ip::tcp::resolver::results_type> Resolve(
    boost::asio::io_context& io, const Endpoint& ep);

// The target's tokenizer through POST /tokenize {"prompt"/"content": text,
// "add_special": true}; understands weft's and vLLM's {"tokens": [ids]} and
// llama-server's answer (ids, or objects with "id").
class HttpTokenizer : public TokenizerClient {
 public:
  HttpTokenizer(Endpoint ep, double timeout_s)
      : ep_(std::move(ep)), timeout_s_(timeout_s) {}
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& text) override;

 private:
  Endpoint ep_;
  double timeout_s_;
};

}  // namespace weft::loadgen
