// Settings of the HTTP server. Filled by apps/ from flags; nothing here reads
// the environment.
#pragma once

#include <cstdint>
#include <string>

namespace weft::server {

struct ServerConfig {
  std::string host = "127.0.0.1";   // address to bind
  int port = 8080;                  // 0 = pick an ephemeral port
  std::string api_key;              // empty = no authentication
  // Access-Control-Allow-Origin sent to browsers (requests with an Origin
  // header), and OPTIONS preflights answered; empty = no CORS. "*" is what
  // vLLM and llama-server allow by default.
  std::string cors_origin = "*";
  int io_threads = 2;               // I/O threads (not one per connection)
  // Threads that render chat templates and tokenize prompts, off the I/O
  // threads (a multi-megabyte prompt takes seconds). >= 1.
  int prepare_threads = 2;
  uint64_t max_body_bytes = 4u << 20;     // larger bodies -> 413
  uint32_t max_header_bytes = 16u << 10;  // larger headers -> 431
  int max_connections = 4096;       // beyond: 503 and close
  double header_read_timeout_s = 30.0;  // first request on a connection
  double idle_timeout_s = 60.0;     // keep-alive wait between requests
  int max_queue = 256;              // waiting requests before 429; <=0 off
  int retry_after_s = 1;            // Retry-After header on 429/503
  int max_n = 16;                   // largest `n` accepted
  int max_sequences = 256;          // prompts x n per request; more -> 400
  double max_request_seconds = 0;   // generation request time cap; 0 = none.
                                    // Past it the request is aborted and
                                    // ends with finish_reason "abort".
  double drain_timeout_s = 30.0;    // default Drain() grace period
  bool log_requests = true;         // one log line per generation request
  bool log_prompts = false;         // include prompt text in that line
  std::string version = "0.0.0";    // reported in effective-config
  std::string build_commit = "unknown";  // reported in effective-config
};

}  // namespace weft::server
