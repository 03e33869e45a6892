// A tiny blocking HTTP/1.1 client on POSIX sockets for the server tests:
// Content-Length, chunked and close-delimited bodies, keep-alive, 10 s
// receive timeout.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace weft::server::testing {

struct ClientResponse {
  int status = 0;                              // 0: no response
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // de-chunked
  bool chunked = false;
};

class HttpConnection {
 public:
  explicit HttpConnection(int port);
  ~HttpConnection();
  bool connected() const { return fd_ >= 0; }

  // Sends raw bytes.
  bool SendRaw(const std::string& bytes);
  // Sends one request (adds Host and Content-Length).
  bool Send(const std::string& method, const std::string& path,
            const std::string& body,
            const std::map<std::string, std::string>& headers = {});
  // Reads one response; status 0 on EOF/timeout/garbage.
  ClientResponse Read();
  // Reads until at least `n` body bytes of a chunked stream arrived (for
  // disconnect tests): returns what was read.
  std::string ReadSome(size_t min_bytes);
  // True when the peer closed (read returns 0) within the timeout.
  bool WaitClosed();
  void Close();

 private:
  bool Fill();  // reads more into buf_; false on EOF/error
  bool ReadLine(std::string* line);
  int fd_ = -1;
  std::string buf_;
};

// One request on a fresh connection.
ClientResponse Fetch(int port, const std::string& method,
                     const std::string& path, const std::string& body = "",
                     const std::map<std::string, std::string>& headers = {});

// Lower-case hex, for chunk sizes.
std::string StrHex(size_t n);

// The payloads of "data: ..." SSE events, in order.
std::vector<std::string> SseEvents(const std::string& body);

}  // namespace weft::server::testing
