// The seam between the HTTP transport (http_server.cc, Boost.Beast) and the
// routes: one request and the means to answer it, fully or as a stream.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace weft::server {

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string path;     // target without the query string
  std::string query;    // after '?', may be empty
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;     // complete body (size bounded by the config)
  std::string remote;   // peer "ip:port"

  // Header value or "".
  std::string Header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
  }
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One request on one connection.
//
// Thread safety: Respond/StartStream/Write/End/SetOnClientGone must run on
// the connection's strand: inside the route handler, or inside a function
// given to Post(). Post() may be called from any thread while the server
// runs (callers outside I/O threads must go through Server's live check).
// After the client is gone, output calls are silently dropped.
class Exchange {
 public:
  virtual ~Exchange() = default;

  virtual const HttpRequest& request() const = 0;

  // A complete response; exactly one of Respond or StartStream per request.
  virtual void Respond(int status, const std::string& content_type,
                       std::string body, const HeaderList& headers = {}) = 0;
  // A chunked response; then Write() pieces and End() once.
  virtual void StartStream(int status, const std::string& content_type,
                           const HeaderList& headers = {}) = 0;
  virtual void Write(std::string data) = 0;
  virtual void End() = 0;

  // Runs `fn` on this connection's strand.
  virtual void Post(std::function<void()> fn) = 0;
  // `fn` runs once, on the strand, if the client disconnects before the
  // response is complete.
  virtual void SetOnClientGone(std::function<void()> fn) = 0;
  // Whether the client disconnected. Callable from any thread (a request
  // being prepared off the strand checks it first).
  virtual bool client_gone() const = 0;
  // `fn` runs once, on the strand, `seconds` from now, unless the response
  // completed or the client left first. A second call replaces the first.
  virtual void SetTimeout(double seconds, std::function<void()> fn) = 0;
};

// Called on the connection's strand for every complete request.
using HttpHandler = std::function<void(std::shared_ptr<Exchange>)>;

// Called with the status of every response the HTTP layer writes itself,
// without the handler: 400 (malformed request), 413, 431, 503 (connection
// cap) and 500 (the handler threw). Runs on the connection's strand.
using HttpResponseObserver = std::function<void(int status)>;

}  // namespace weft::server
