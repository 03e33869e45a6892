// A Server on an ephemeral port with a FakeBackend, for HTTP-level tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "server/server.h"
#include "server/testing/fake_backend.h"
#include "tests/server/http_client.h"

namespace weft::server::testing {

using json = nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void StartServer(ServerConfig config = {},
                   FakeBackendOptions options = {}) {
    config.port = 0;
    config.log_requests = false;
    backend_ = std::make_unique<FakeBackend>(options);
    server_ = std::make_unique<Server>(config, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    port_ = server_->port();
  }
  void SetUp() override { StartServer(); }
  void TearDown() override {
    server_.reset();
    backend_.reset();
  }

  ClientResponse Post(const std::string& path, const std::string& body,
                      const std::map<std::string, std::string>& h = {}) {
    return Fetch(port_, "POST", path, body, h);
  }
  ClientResponse Get(const std::string& path) {
    return Fetch(port_, "GET", path);
  }
  // The parsed JSON payloads of an SSE body; checks framing and [DONE].
  std::vector<json> Stream(const ClientResponse& r) {
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.chunked);
    EXPECT_EQ(r.headers.at("content-type"), "text/event-stream");
    std::vector<std::string> events = SseEvents(r.body);
    EXPECT_FALSE(events.empty());
    if (events.empty()) return {};
    EXPECT_EQ(events.back(), "[DONE]");
    EXPECT_EQ(r.body.substr(r.body.size() - 14), "data: [DONE]\n\n");
    std::vector<json> out;
    for (size_t i = 0; i + 1 < events.size(); ++i) {
      json j = json::parse(events[i], nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << events[i];
      out.push_back(j);
    }
    return out;
  }
  // Expects an OpenAI error body with this status (and param, if given).
  void ExpectError(const ClientResponse& r, int status,
                   const char* param = nullptr) {
    EXPECT_EQ(r.status, status) << r.body;
    json j = json::parse(r.body, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << r.body;
    ASSERT_TRUE(j.contains("error")) << r.body;
    const json& e = j["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_TRUE(e["type"].is_string());
    EXPECT_TRUE(e.contains("param"));
    EXPECT_TRUE(e.contains("code"));
    if (param) {
      EXPECT_EQ(e["param"], param) << r.body;
    }
  }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<Server> server_;
  int port_ = 0;
};

}  // namespace weft::server::testing
