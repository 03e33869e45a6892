// A short benchmark against the real HTTP server (src/server) backed by the
// FakeBackend, through the library and through `weft bench serve|compare|
// plot`. Checks the shape and consistency of the results, never timings.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "loadgen/http_client.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"
#include "server/server.h"
#include "server/testing/fake_backend.h"

namespace weft::loadgen {
namespace {

using json = nlohmann::json;
using server::testing::FakeBackend;
using server::testing::FakeBackendOptions;

class BenchE2eTest : public ::testing::Test {
 protected:
  void Start(FakeBackendOptions opt = {}) {
    opt.context_length = 8192;
    backend_ = std::make_unique<FakeBackend>(opt);
    server::ServerConfig config;
    config.port = 0;
    config.log_requests = false;
    server_ = std::make_unique<server::Server>(config, backend_.get());
    ASSERT_TRUE(server_->Start().ok());
    ep_.host = "127.0.0.1";
    ep_.port = std::to_string(server_->port());
  }
  void SetUp() override { Start(); }
  void TearDown() override {
    server_.reset();
    backend_.reset();
  }

  WorkloadPlan Plan(WorkloadParams p, int64_t pool, bool text = false) {
    HttpTokenizer tok(ep_, 10);
    StatusOr<WorkloadPlan> plan = BuildWorkload(p, &tok, pool, text);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return plan.ok() ? *plan : WorkloadPlan();
  }
  RunConfig Config() {
    RunConfig rc;
    rc.endpoint = ep_;
    rc.progress = false;
    rc.warmup = 1;
    rc.timeout_s = 30;
    return rc;
  }
  std::string Url() const { return "http://127.0.0.1:" + ep_.port; }

  std::unique_ptr<FakeBackend> backend_;
  std::unique_ptr<server::Server> server_;
  Endpoint ep_;
};

WorkloadParams SmallS1() {
  WorkloadParams p = DefaultParams(WorkloadKind::kS1);
  p.prompt_tokens = 32;
  p.output_tokens = 8;
  return p;
}

TEST_F(BenchE2eTest, ShortS1Ladder) {
  WorkloadPlan plan = Plan(SmallS1(), 16);
  RunConfig rc = Config();
  rc.concurrency = {1, 2};
  rc.num_requests = 4;
  rc.model = "fake-model";
  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  ASSERT_EQ(run->levels.size(), 2u);
  EXPECT_EQ(run->warmup_failures, 0);
  Slo slo;
  slo.ttft_ms = 60000;
  slo.tpot_ms = 60000;
  json doc = ResultJson(RunMetadata(), *run, slo, true);
  EXPECT_EQ(doc["format"], "weft-bench-serve");
  EXPECT_TRUE(doc["valid"].get<bool>());
  ASSERT_EQ(doc["levels"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& l = doc["levels"][i];
    EXPECT_EQ(l["mode"], "closed");
    EXPECT_EQ(l["concurrency"], i == 0 ? 1 : 2);
    const json& s = l["summary"];
    EXPECT_EQ(s["completed"], 4) << s.dump();
    EXPECT_EQ(s["failed"], 0);
    EXPECT_EQ(s["output_tokens"], 32);
    EXPECT_EQ(s["prompt_tokens"], 4 * 32);
    EXPECT_EQ(s["token_mismatches"], 0);
    EXPECT_EQ(s["usage_missing"], 0);
    EXPECT_EQ(s["prompt_mismatches"], 0);
    EXPECT_EQ(s["ttft_ms"]["count"], 4);
    EXPECT_EQ(s["tpot_ms"]["count"], 4);
    EXPECT_EQ(s["itl_ms"]["count"], 4 * 7);  // one token per chunk
    EXPECT_EQ(s["e2e_ms"]["count"], 4);
    for (const char* d : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) {
      EXPECT_LE(s[d]["p50"].get<double>(), s[d]["p99"].get<double>() + 1e-9);
      EXPECT_LE(s[d]["p99"].get<double>(), s[d]["max"].get<double>() + 1e-9);
      EXPECT_GE(s[d]["min"].get<double>(), 0);
    }
    EXPECT_LE(s["ttft_ms"]["max"].get<double>(), s["e2e_ms"]["max"].get<double>());
    EXPECT_GT(s["output_throughput"].get<double>(), 0);
    EXPECT_EQ(s["goodput"].get<double>(), s["request_throughput"].get<double>());
    ASSERT_EQ(l["samples"].size(), 4u);
    for (const json& r : l["samples"]) {
      EXPECT_TRUE(r["ok"].get<bool>());
      EXPECT_EQ(r["output_tokens"], 8);
      EXPECT_EQ(r["prompt_tokens"], 32);
      EXPECT_EQ(r["itl_s"].size(), 7u);
      EXPECT_EQ(r["finish_reason"], "length");
    }
  }
  // What the server got: temperature 0, ignore_eos, max_tokens, the prompt.
  std::vector<server::GenerateRequest> got = backend_->submitted();
  ASSERT_EQ(got.size(), 9u);  // 1 warm-up + 2 x 4
  for (const server::GenerateRequest& g : got) {
    EXPECT_TRUE(g.ignore_eos);
    EXPECT_EQ(g.max_tokens, 8);
    EXPECT_EQ(g.prompt_ids.size(), 32u);
    EXPECT_EQ(g.sampling.temperature, 0.0f);
  }
}

TEST_F(BenchE2eTest, TextPromptsAndChat) {
  WorkloadPlan plan = Plan(SmallS1(), 4, /*text=*/true);
  RunConfig rc = Config();
  rc.concurrency = {2};
  rc.num_requests = 4;
  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  LevelSummary s = SummarizeLevel(run->levels[0], Slo(), true);
  EXPECT_EQ(s.completed, 4);
  EXPECT_EQ(s.prompt_mismatches, 0);  // text fitted to exactly 32 tokens
  rc.chat = true;
  run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  s = SummarizeLevel(run->levels[0], Slo(), true);
  EXPECT_EQ(s.completed, 4);
  EXPECT_TRUE(s.valid);
  EXPECT_EQ(s.itl_ms.count, 4 * 7);
}

TEST_F(BenchE2eTest, EarlyStopMarksTheRunInvalid) {
  TearDown();
  FakeBackendOptions opt;
  opt.eos_after = 3;
  Start(opt);
  WorkloadPlan plan = Plan(SmallS1(), 4);
  RunConfig rc = Config();
  rc.ignore_eos = false;  // the server stops at EOS after 3 tokens
  rc.num_requests = 2;
  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  json doc = ResultJson(RunMetadata(), *run, Slo(), /*check_tokens=*/true);
  EXPECT_FALSE(doc["valid"].get<bool>());
  EXPECT_EQ(doc["levels"][0]["summary"]["token_mismatches"], 2);
  EXPECT_NE(MarkdownReport(doc).find("INVALID"), std::string::npos);
}

TEST_F(BenchE2eTest, FailuresAreCountedByKind) {
  WorkloadPlan plan = Plan(SmallS1(), 4);
  backend_->set_reject_submits(true);
  RunConfig rc = Config();
  rc.warmup = 0;
  rc.num_requests = 3;
  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  LevelSummary s = SummarizeLevel(run->levels[0], Slo(), true);
  EXPECT_EQ(s.completed, 0);
  EXPECT_EQ(s.failed, 3);
  ASSERT_EQ(s.failures.size(), 1u);
  EXPECT_EQ(s.failures.begin()->first.rfind("http_", 0), 0u);
  backend_->set_reject_submits(false);

  backend_->set_fail_after(2);  // an error event in the middle of the stream
  run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  s = SummarizeLevel(run->levels[0], Slo(), true);
  EXPECT_EQ(s.failures["stream_error"], 3);
  backend_->set_fail_after(-1);

  Endpoint closed = ep_;
  closed.port = "1";  // nothing listens there
  rc.endpoint = closed;
  run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  s = SummarizeLevel(run->levels[0], Slo(), true);
  EXPECT_EQ(s.failures["connection_error"], 3);
}

TEST_F(BenchE2eTest, OpenLoopAndStallSchedules) {
  WorkloadPlan plan = Plan(SmallS1(), 8);
  RunConfig rc = Config();
  rc.rates = {200, 400};
  rc.num_requests = 5;
  StatusOr<RunResult> run = RunBenchmark(rc, plan);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->levels.size(), 2u);
  for (const LevelResult& l : run->levels) {
    EXPECT_EQ(l.mode, "open");
    ASSERT_EQ(l.requests.size(), 5u);
    for (const RequestResult& r : l.requests) {
      EXPECT_TRUE(r.ok()) << r.error;
      EXPECT_GT(r.scheduled_at, 0);
      EXPECT_GE(r.sent_at + 1e-9, r.scheduled_at - 0.05);
    }
  }
  EXPECT_EQ(run->levels[1].rate, 400);

  TearDown();
  FakeBackendOptions opt;
  opt.token_delay_ms = 2;
  Start(opt);
  WorkloadParams p = DefaultParams(WorkloadKind::kS2);
  p.prompt_tokens = 16;
  p.output_tokens = 30;
  p.long_prompt_tokens = 64;
  p.long_count = 2;
  WorkloadPlan s2 = Plan(p, 8);
  rc = Config();
  rc.stall_test = true;
  rc.background_streams = 2;
  rc.long_every_s = 0.05;
  run = RunBenchmark(rc, s2);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->levels.size(), 1u);
  json doc = ResultJson(RunMetadata(), *run, Slo(), true);
  const json& st = doc["levels"][0]["summary"]["stall"];
  EXPECT_EQ(st["long_requests"], 2);
  EXPECT_EQ(st["long_ttft_ms"]["count"], 2);
  EXPECT_GT(st["itl_all_ms"]["count"].get<int>(), 0);
  EXPECT_TRUE(doc["valid"].get<bool>());
  EXPECT_NE(MarkdownReport(doc).find("Stall test"), std::string::npos);
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int Shell(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST_F(BenchE2eTest, CommandLine) {
  const std::string bin = WEFT_BINARY;
  const std::string dir = ::testing::TempDir();
  const std::string out = dir + "/bench_e2e_s1.json";
  const std::string md = dir + "/bench_e2e_s1.md";
  ASSERT_EQ(Shell(bin + " bench serve --url " + Url() +
                  " --workload S1 --prompt-tokens 16 --output-tokens 4"
                  " --concurrency 1,2 --num-requests 3 --warmup 1"
                  " --slo ttft=60000,tpot=60000 --label fake --no-progress"
                  " --out " + out + " > " + md),
            0);
  json doc = json::parse(Slurp(out), nullptr, false);
  ASSERT_FALSE(doc.is_discarded());
  EXPECT_TRUE(doc["valid"].get<bool>());
  const json& m = doc["metadata"];
  EXPECT_NE(m["command_line"].get<std::string>().find("weft bench serve --url"), std::string::npos);
  EXPECT_EQ(m["model"], "fake-model");  // from /v1/models
  EXPECT_EQ(m["label"], "fake");
  EXPECT_EQ(m["workload"]["name"], "S1");
  EXPECT_EQ(m["workload"]["prompt_tokens"], 16);
  EXPECT_FALSE(m["time_utc"].get<std::string>().empty());
  EXPECT_EQ(m["server"]["model"]["path"], "/fake/model.gguf");
  ASSERT_EQ(doc["levels"].size(), 2u);
  EXPECT_EQ(doc["levels"][1]["summary"]["completed"], 3);
  EXPECT_TRUE(doc["levels"][1]["summary"]["goodput"].is_number());
  std::string report = Slurp(md);
  EXPECT_EQ(report.rfind("# weft bench serve", 0), 0u) << report;
  EXPECT_NE(report.find("| c=2 |"), std::string::npos) << report;
  EXPECT_NE(report.find("model file /fake/model.gguf"), std::string::npos) << report;

  const std::string cmp = dir + "/bench_e2e_cmp.md";
  ASSERT_EQ(Shell(bin + " bench compare " + out + " " + out + " > " + cmp), 0);
  EXPECT_NE(Slurp(cmp).find("| 1.000 |"), std::string::npos);
  const std::string svg = dir + "/bench_e2e.svg";
  ASSERT_EQ(Shell(bin + " bench plot " + out + " " + out + " -o " + svg), 0);
  EXPECT_EQ(Slurp(svg).rfind("<svg", 0), 0u);

  // An open-loop ladder with vLLM's spellings: the capacity under the SLO.
  const std::string open = dir + "/bench_e2e_open.json";
  const std::string open_md = dir + "/bench_e2e_open.md";
  ASSERT_EQ(Shell(bin + " bench serve --url " + Url() +
                  " --workload S1 --prompt-tokens 16 --output-tokens 4"
                  " --request-rate 200,400 --num-requests 3 --warmup 0"
                  " --goodput ttft:60000,tpot:60000 --no-progress"
                  " --out " + open + " > " + open_md),
            0);
  json odoc = json::parse(Slurp(open), nullptr, false);
  ASSERT_FALSE(odoc.is_discarded());
  EXPECT_EQ(odoc["slo"]["ttft_ms"], 60000);
  EXPECT_EQ(odoc["capacity"]["max_rate"], 400);
  EXPECT_NE(Slurp(open_md).find("capacity: the highest offered rate with 90% of requests"),
            std::string::npos);
  ASSERT_EQ(Shell(bin + " bench compare " + open + " " + open + " > " + cmp), 0);
  EXPECT_NE(Slurp(cmp).find("| all | max rate, 90% in SLO | 400.000 | 400.000 | 1.000 |"),
            std::string::npos)
      << Slurp(cmp);

  // Bad usage and bad input: exit 2, no crash.
  const std::string quiet = " > /dev/null 2>&1";
  EXPECT_EQ(Shell(bin + " bench serve" + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench serve --url ftp://x" + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench serve --url " + Url() + " --workload S3" + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench serve --url " + Url() + " --workload /nonexistent.jsonl" + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench compare " + out + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench compare " + out + " " + md + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench plot " + out + quiet), 2);
  EXPECT_EQ(Shell(bin + " bench nosuchverb" + quiet), 2);
}

}  // namespace
}  // namespace weft::loadgen
