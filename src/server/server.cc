#include "server/server.h"

#include <algorithm>
#include <ctime>
#include <random>

#include "server/http_server.h"
#include "server/server_state.h"
#include "util/log.h"
#include "util/strings.h"

namespace weft::server {

// ---- ServerState ----

ServerState::ServerState(ServerConfig c, Backend* b)
    : config(std::move(c)),
      backend(b),
      metrics(b->model_info().id),
      prepare(std::max(1, config.prepare_threads)),
      start_unix(static_cast<int64_t>(std::time(nullptr))),
      start(std::chrono::steady_clock::now()) {
  std::random_device rd;
  salt_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string ServerState::NewId(const char* prefix) {
  uint64_t n = counter_.fetch_add(1);
  // splitmix64 of salt+n: unique per process, unpredictable across runs.
  uint64_t z = salt_ + n * 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return StrFormat("%s-%016llx%08llx", prefix, (unsigned long long)z,
                   (unsigned long long)(n & 0xffffffffu));
}

void ServerState::Register(const std::string& id, CallEntry entry) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  calls_[id] = std::move(entry);
}

void ServerState::AddBackendId(const std::string& id,
                               const std::string& backend_id) {
  std::lock_guard<std::mutex> lock(calls_mu_);
  auto it = calls_.find(id);
  if (it != calls_.end()) it->second.backend_ids.push_back(backend_id);
}

void ServerState::Unregister(const std::string& id) {
  std::shared_ptr<void> keep;  // destroyed outside the lock
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    auto it = calls_.find(id);
    if (it == calls_.end()) return;
    keep = std::move(it->second.call);
    calls_.erase(it);
  }
  calls_cv_.notify_all();
}

void ServerState::ClearCalls() {
  std::map<std::string, CallEntry> calls;
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    calls.swap(calls_);
  }
  calls_cv_.notify_all();
}

size_t ServerState::InFlight() {
  std::lock_guard<std::mutex> lock(calls_mu_);
  return calls_.size();
}

bool ServerState::WaitIdle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(calls_mu_);
  return calls_cv_.wait_until(lock, deadline, [&] { return calls_.empty(); });
}

void ServerState::AbortAll() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(calls_mu_);
    for (const auto& [id, e] : calls_) {
      ids.insert(ids.end(), e.backend_ids.begin(), e.backend_ids.end());
    }
  }
  for (const auto& id : ids) backend->Abort(id);
}

// ---- helpers ----

double SecondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

void SendJson(ServerState& s, Exchange& ex, int status, std::string body) {
  s.metrics.RecordHttp(status);
  ex.Respond(status, "application/json", std::move(body));
}

void SendError(ServerState& s, Exchange& ex, const ApiError& e) {
  s.metrics.RecordHttp(e.http_status);
  HeaderList h;
  if (e.http_status == 429 || e.http_status == 503) {
    h.emplace_back("Retry-After", std::to_string(s.config.retry_after_s));
  }
  if (e.http_status == 401) h.emplace_back("WWW-Authenticate", "Bearer");
  // Anthropic's routes answer in Anthropic's error shape.
  const bool anthropic = ex.request().path.rfind("/v1/messages", 0) == 0;
  ex.Respond(e.http_status, "application/json", anthropic ? e.ToAnthropicJson() : e.ToJson(), h);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // No early exit: every byte of the longer input is visited and the result
  // is one OR-accumulated difference (volatile, so that it is not turned
  // into a branch per byte).
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

namespace {

bool Authorized(const ServerState& s, const HttpRequest& r) {
  if (s.config.api_key.empty()) return true;
  // Anthropic's clients send the key as x-api-key.
  std::string x = r.Header("x-api-key");
  if (!x.empty()) return ConstantTimeEquals(x, s.config.api_key);
  std::string h = r.Header("authorization");
  const std::string prefix = "bearer ";  // the scheme is case-insensitive
  if (h.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(h[i])) != prefix[i]) {
      return false;
    }
  }
  return ConstantTimeEquals(std::string_view(h).substr(prefix.size()),
                            s.config.api_key);
}

struct Route {
  const char* path;
  const char* method;
  bool needs_auth;
  void (*fn)(ServerState&, const std::shared_ptr<Exchange>&);
};

// A handler that needs the exchange but not a share of its ownership.
template <void (*kHandler)(ServerState&, Exchange&)>
void OnExchange(ServerState& s, const std::shared_ptr<Exchange>& ex) {
  kHandler(s, *ex);
}

const Route kRoutes[] = {
    {"/v1/completions", "POST", true,
     [](ServerState& s, const std::shared_ptr<Exchange>& ex) {
       HandleCompletions(s, ex, false);
     }},
    {"/v1/chat/completions", "POST", true,
     [](ServerState& s, const std::shared_ptr<Exchange>& ex) {
       HandleCompletions(s, ex, true);
     }},
    {"/v1/messages", "POST", true, HandleMessages},
    {"/v1/messages/count_tokens", "POST", true, OnExchange<HandleCountTokens>},
    {"/v1/responses", "POST", true, HandleResponses},
    {"/v1/models", "GET", true, OnExchange<HandleModels>},
    {"/v1/models/{model}", "GET", true, OnExchange<HandleModel>},
    {"/health", "GET", false,
     [](ServerState& s, const std::shared_ptr<Exchange>& ex) {
       HandleHealth(s, *ex, false);
     }},
    {"/health/ready", "GET", false,
     [](ServerState& s, const std::shared_ptr<Exchange>& ex) {
       HandleHealth(s, *ex, true);
     }},
    {"/health/live", "GET", false, OnExchange<HandleLive>},
    {"/tokenize", "POST", true, OnExchange<HandleTokenize>},
    {"/detokenize", "POST", true, OnExchange<HandleDetokenize>},
    {"/metrics", "GET", false, OnExchange<HandleMetrics>},
    {"/v1/effective-config", "GET", true, OnExchange<HandleEffectiveConfig>},
};

// A pattern's trailing "{param}" matches the non-empty rest of the path.
bool PathMatches(std::string_view pattern, std::string_view path) {
  const size_t brace = pattern.find('{');
  if (brace == std::string_view::npos) return pattern == path;
  return path.size() > brace && path.substr(0, brace) == pattern.substr(0, brace);
}

void Dispatch(ServerState& s, const std::shared_ptr<Exchange>& ex) {
  const HttpRequest& r = ex->request();
  std::string path = r.path;
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  if (r.method == "OPTIONS" && !s.config.cors_origin.empty()) {
    // A browser's CORS preflight: no credentials are sent with it.
    s.metrics.RecordHttp(204);
    return ex->Respond(
        204, "text/plain", "",
        {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
         {"Access-Control-Allow-Headers",
          r.Header("access-control-request-headers").empty()
              ? "Authorization, Content-Type"
              : r.Header("access-control-request-headers")},
         {"Access-Control-Max-Age", "86400"}});
  }
  std::string allowed;
  for (const Route& route : kRoutes) {
    if (!PathMatches(route.path, path)) continue;
    if (r.method != route.method) {
      if (!allowed.empty()) allowed += ", ";
      allowed += route.method;
      continue;
    }
    if (route.needs_auth && !Authorized(s, r)) {
      return SendError(s, *ex, Unauthorized());
    }
    return route.fn(s, ex);
  }
  if (!allowed.empty()) {
    ApiError e = MethodNotAllowed(StrFormat(
        "method %s is not allowed on %s", r.method.c_str(), path.c_str()));
    s.metrics.RecordHttp(405);
    return ex->Respond(405, "application/json", e.ToJson(),
                       {{"Allow", allowed}});
  }
  SendError(s, *ex, NotFound("no route for " + CEscape(path, 200)));
}

}  // namespace

// ---- Server ----

Server::Server(ServerConfig config, Backend* backend)
    : state_(std::make_unique<ServerState>(std::move(config), backend)) {
  CHECK(backend != nullptr);
}

Server::~Server() { Stop(); }

Status Server::Start() {
  ServerState* s = state_.get();
  http_ = std::make_unique<HttpServer>(
      s->config, [s](std::shared_ptr<Exchange> ex) { Dispatch(*s, ex); },
      [s](int status) { s->metrics.RecordHttp(status); });
  s->http = http_.get();
  RETURN_IF_ERROR(http_->Start());
  LOG(INFO) << "serving on http://" << s->config.host << ":" << http_->port();
  return OkStatus();
}

int Server::port() const { return http_ ? http_->port() : 0; }

size_t Server::in_flight() const { return state_->InFlight(); }

void Server::Drain(std::chrono::steady_clock::time_point deadline) {
  state_->draining = true;
  if (http_) http_->StopAccepting();
  size_t n = state_->InFlight();
  if (n > 0) {
    LOG(INFO) << "draining " << n << " in-flight request(s)";
  }
  if (!state_->WaitIdle(deadline)) {
    LOG(WARNING) << "drain deadline passed; aborting "
                 << state_->InFlight() << " request(s)";
  }
  // Let the last bytes of finished responses reach their clients.
  if (http_) http_->WaitResponsesWritten(deadline);
  Stop();
}

void Server::Stop() {
  if (stopped_) return;
  stopped_ = true;
  state_->draining = true;
  if (http_) http_->StopAccepting();
  // Abort what is left and give the backend a moment to deliver the final
  // events, so that no callback outlives the I/O layer.
  state_->AbortAll();
  auto grace = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  state_->WaitIdle(grace);
  // Flush what the aborted requests wrote (bounded: slow readers lose).
  if (http_) {
    http_->WaitResponsesWritten(std::min(
        grace, std::chrono::steady_clock::now() + std::chrono::seconds(1)));
  }
  state_->gate->Close();
  // A request still being prepared finds the gate closed and goes no further.
  state_->prepare.Stop();
  if (http_) http_->Stop();
  // Calls still registered (a backend that never answered) hold
  // connections; drop them before the I/O context goes.
  state_->ClearCalls();
  http_.reset();
}

}  // namespace weft::server
