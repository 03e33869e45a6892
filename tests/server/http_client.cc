#include "tests/server/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace weft::server::testing {

HttpConnection::HttpConnection(int port) {
  fd_ = socket(AF_INET, SOCK_STREAM, 0);
  if (fd_ < 0) return;
  timeval tv{10, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    Close();
  }
}

HttpConnection::~HttpConnection() { Close(); }

void HttpConnection::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

bool HttpConnection::SendRaw(const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

bool HttpConnection::Send(const std::string& method, const std::string& path,
                          const std::string& body,
                          const std::map<std::string, std::string>& headers) {
  std::string req = method + " " + path + " HTTP/1.1\r\nHost: localhost\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST") {
    req += "Content-Type: application/json\r\n";
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n" + body;
  return SendRaw(req);
}

bool HttpConnection::Fill() {
  char tmp[16384];
  ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
  if (n <= 0) return false;
  buf_.append(tmp, static_cast<size_t>(n));
  return true;
}

bool HttpConnection::ReadLine(std::string* line) {
  size_t pos;
  while ((pos = buf_.find("\r\n")) == std::string::npos) {
    if (!Fill()) return false;
  }
  *line = buf_.substr(0, pos);
  buf_.erase(0, pos + 2);
  return true;
}

ClientResponse HttpConnection::Read() {
  ClientResponse r;
  std::string line;
  if (fd_ < 0 || !ReadLine(&line)) return r;
  if (line.rfind("HTTP/1.1 ", 0) != 0 || line.size() < 12) return r;
  int status = std::atoi(line.substr(9, 3).c_str());
  while (true) {
    if (!ReadLine(&line)) return r;
    if (line.empty()) break;
    size_t colon = line.find(':');
    if (colon == std::string::npos) return r;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    size_t v = line.find_first_not_of(' ', colon + 1);
    r.headers[name] = v == std::string::npos ? "" : line.substr(v);
  }
  if (status == 204 || status == 304) {
    // No body, whatever the headers say (RFC 9112 6.3).
  } else if (r.headers["transfer-encoding"] == "chunked") {
    r.chunked = true;
    while (true) {
      if (!ReadLine(&line)) return r;
      size_t size = std::strtoul(line.c_str(), nullptr, 16);
      while (buf_.size() < size + 2) {
        if (!Fill()) return r;
      }
      r.body += buf_.substr(0, size);
      buf_.erase(0, size + 2);
      if (size == 0) break;
    }
  } else if (!r.headers.count("content-length")) {
    while (Fill()) {
    }
    r.body = std::move(buf_);  // delimited by the close (HTTP/1.0 style)
    buf_.clear();
  } else {
    size_t len = std::strtoul(r.headers["content-length"].c_str(), nullptr, 10);
    while (buf_.size() < len) {
      if (!Fill()) return r;
    }
    r.body = buf_.substr(0, len);
    buf_.erase(0, len);
  }
  r.status = status;
  return r;
}

std::string HttpConnection::ReadSome(size_t min_bytes) {
  while (buf_.size() < min_bytes) {
    if (!Fill()) break;
  }
  return buf_;
}

bool HttpConnection::WaitClosed() {
  while (true) {
    char tmp[4096];
    ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n == 0) return true;
    if (n < 0) return false;  // timeout or error
  }
}

ClientResponse Fetch(int port, const std::string& method,
                     const std::string& path, const std::string& body,
                     const std::map<std::string, std::string>& headers) {
  HttpConnection c(port);
  if (!c.connected() || !c.Send(method, path, body, headers)) return {};
  return c.Read();
}

std::string StrHex(size_t n) {
  char buf[32];
  snprintf(buf, sizeof(buf), "%zx", n);
  return buf;
}

std::vector<std::string> SseEvents(const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) end = body.size();
    std::string ev = body.substr(pos, end - pos);
    if (ev.rfind("data: ", 0) == 0) out.push_back(ev.substr(6));
    pos = end + 2;
  }
  return out;
}

}  // namespace weft::server::testing
