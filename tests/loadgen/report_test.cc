#include "loadgen/report.h"

#include <gtest/gtest.h>

#include "loadgen/compare.h"
#include "loadgen/plot.h"

namespace weft::loadgen {
namespace {

using json = nlohmann::json;

// A completed request: sent at `at`, first token after `ttft`, then
// `out - 1` tokens `gap` apart.
RequestResult Done(double at, double ttft, int out, double gap,
                   int max_tokens = -1, const char* group = "") {
  RequestResult r;
  r.sent_at = at;
  r.group = group;
  r.ttft = ttft;
  r.max_tokens = max_tokens < 0 ? out : max_tokens;
  r.output_tokens = out;
  r.usage_seen = true;
  r.prompt_tokens = 10;
  r.prompt_tokens_planned = 10;
  double t = at + ttft;
  r.chunk_at.push_back(t);
  r.chunk_tokens.push_back(1);
  for (int i = 1; i < out; ++i) {
    t += gap;
    r.chunk_at.push_back(t);
    r.chunk_tokens.push_back(1);
    r.itl.push_back(gap);
  }
  r.e2e = t - at;
  return r;
}

LevelResult Level(std::vector<RequestResult> rs, double duration) {
  LevelResult l;
  l.mode = "closed";
  l.concurrency = 2;
  l.duration_s = duration;
  l.requests = std::move(rs);
  return l;
}

TEST(SummaryTest, ThroughputGoodputAndFailures) {
  RequestResult failed;
  failed.failure = FailureKind::kHttpStatus;
  failed.http_status = 429;
  RequestResult timeout;
  timeout.failure = FailureKind::kTimeout;
  LevelResult l = Level({Done(0, 0.1, 11, 0.01), Done(0, 0.5, 11, 0.2),
                         Done(1, 0.2, 11, 0.05), failed, timeout},
                        4.0);
  Slo slo;
  slo.ttft_ms = 300;
  slo.tpot_ms = 100;
  LevelSummary s = SummarizeLevel(l, slo, true);
  EXPECT_EQ(s.requests, 5);
  EXPECT_EQ(s.completed, 3);
  EXPECT_EQ(s.failed, 2);
  EXPECT_EQ(s.failures["http_429"], 1);
  EXPECT_EQ(s.failures["timeout"], 1);
  EXPECT_DOUBLE_EQ(s.request_throughput, 0.75);
  EXPECT_DOUBLE_EQ(s.output_throughput, 33.0 / 4);
  EXPECT_DOUBLE_EQ(s.total_token_throughput, 63.0 / 4);
  // Requests 1 and 3 meet TTFT <= 300 ms and TPOT <= 100 ms; 2 misses both.
  ASSERT_TRUE(s.goodput.has_value());
  EXPECT_DOUBLE_EQ(*s.goodput, 2.0 / 4);
  EXPECT_DOUBLE_EQ(*s.slo_attainment, 2.0 / 5);
  EXPECT_EQ(s.itl_ms.count, 30);
  EXPECT_NEAR(s.tpot_ms.mean, (10 + 200 + 50) / 3.0, 1e-9);
  EXPECT_NEAR(s.ttft_ms.p50, 200, 1e-9);
  EXPECT_TRUE(s.valid);
  EXPECT_FALSE(SummarizeLevel(l, Slo(), true).goodput.has_value());
}

TEST(SummaryTest, TokenMismatchMakesTheLevelInvalid) {
  LevelResult l = Level({Done(0, 0.1, 8, 0.01, 8), Done(0, 0.1, 5, 0.01, 8)}, 1);
  LevelSummary s = SummarizeLevel(l, Slo(), true);
  EXPECT_EQ(s.token_mismatches, 1);
  EXPECT_FALSE(s.valid);
  EXPECT_TRUE(SummarizeLevel(l, Slo(), false).valid);  // ignore_eos off

  RunResult run;
  run.levels.push_back(l);
  RunMetadata meta;
  meta.command_line = "weft bench serve --url http://x:1";
  json doc = ResultJson(meta, run, Slo(), true);
  EXPECT_FALSE(doc["valid"].get<bool>());
  std::string md = MarkdownReport(doc);
  EXPECT_NE(md.find("INVALID"), std::string::npos);
  EXPECT_NE(md.find("`weft bench serve --url http://x:1`"), std::string::npos);
}

TEST(StallTest, BackgroundItlDuringPrefill) {
  // Background stream: tokens every 10 ms from t=0.1 to t=1.0, except one
  // 50 ms gap ending at t=0.55, while a long prompt (sent at 0.5, first
  // token at 0.6) is prefilled.
  RequestResult bg;
  bg.group = "background";
  bg.sent_at = 0;
  bg.ttft = 0.1;
  std::vector<double> times;
  for (double t = 0.1; t < 0.5 - 1e-9; t += 0.01) times.push_back(t);
  times.push_back(0.55);
  for (double t = 0.56; t < 1.0 + 1e-9; t += 0.01) times.push_back(t);
  for (size_t i = 0; i < times.size(); ++i) {
    bg.chunk_at.push_back(times[i]);
    bg.chunk_tokens.push_back(1);
    if (i > 0) bg.itl.push_back(times[i] - times[i - 1]);
  }
  RequestResult lng;
  lng.group = "long";
  lng.sent_at = 0.5;
  lng.ttft = 0.1;
  lng.e2e = 0.2;
  StallSummary s = SummarizeStall({bg, lng});
  EXPECT_EQ(s.long_requests, 1);
  EXPECT_NEAR(s.long_ttft_ms.max, 100, 1e-9);
  EXPECT_NEAR(s.itl_all_ms.p50, 10, 1e-6);
  EXPECT_NEAR(s.itl_prefill_ms.max, 60, 1e-6);  // 0.49 -> 0.55
  EXPECT_EQ(s.itl_prefill_ms.count, 6);         // gaps ending 0.55 .. 0.60
  ASSERT_TRUE(s.stall_free.has_value());
  EXPECT_FALSE(*s.stall_free);  // 60 ms > 2 x 10 ms
}

TEST(StallTest, NoOverlapIsUnknown) {
  RequestResult lng;
  lng.group = "long";
  lng.sent_at = 5;
  lng.ttft = 0.1;
  StallSummary s = SummarizeStall({Done(0, 0.1, 5, 0.01, -1, "background"), lng});
  EXPECT_FALSE(s.stall_free.has_value());
}

json Doc(double tput, double ttft_p50) {
  LevelResult l = Level({Done(0, ttft_p50, 3, 0.01)}, 1);
  RunResult run;
  run.levels.push_back(l);
  json doc = ResultJson(RunMetadata(), run, Slo(), true);
  doc["levels"][0]["summary"]["output_throughput"] = tput;
  return doc;
}

TEST(CapacityTest, HighestRateThatKeepsNinetyPercentInSlo) {
  auto level = [](double rate, double attainment) {
    return json{{"mode", "open"},
                {"rate", rate},
                {"summary", {{"slo_attainment", attainment}, {"goodput", rate * attainment}}}};
  };
  Slo slo;
  slo.ttft_ms = 2000;
  json levels = json::array({level(1, 1.0), level(2, 0.95), level(4, 0.5), level(3, 0.85)});
  json c = CapacityJson(levels, slo);
  EXPECT_EQ(c["attainment"].get<double>(), 0.9);
  EXPECT_EQ(c["max_rate"].get<double>(), 2);
  EXPECT_DOUBLE_EQ(c["goodput_at_max_rate"].get<double>(), 1.9);
  EXPECT_TRUE(CapacityJson(json::array({level(1, 0.5)}), slo)["max_rate"].is_null());
  EXPECT_TRUE(CapacityJson(levels, Slo()).is_null());  // no SLO
  json closed = json::array({{{"mode", "closed"}, {"summary", json::object()}}});
  EXPECT_TRUE(CapacityJson(closed, slo).is_null());
}

TEST(CompareTest, RatiosBOverA) {
  StatusOr<std::string> t = CompareReport(Doc(100, 0.2), Doc(150, 0.1), "weft", "llama");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NE(t->find("| c=2 | output tok/s | 100.00 | 150.00 | 1.500 |"), std::string::npos) << *t;
  EXPECT_NE(t->find("| c=2 | TTFT p50 ms | 200.00 | 100.00 | 0.500 |"), std::string::npos) << *t;
  json other = Doc(1, 1);
  other["levels"][0]["concurrency"] = 7;
  EXPECT_FALSE(CompareReport(Doc(1, 1), other, "a", "b").ok());
  EXPECT_FALSE(CompareReport(json::object(), Doc(1, 1), "a", "b").ok());
}

TEST(PlotTest, SvgHasThreeChartsAndEveryRun) {
  StatusOr<std::string> svg = PlotSvg({{"alpha", Doc(100, 0.2)}, {"beta", Doc(50, 0.3)}});
  ASSERT_TRUE(svg.ok()) << svg.status().ToString();
  EXPECT_EQ(svg->rfind("<svg", 0), 0u);
  EXPECT_NE(svg->find("</svg>"), std::string::npos);
  EXPECT_NE(svg->find("TTFT CDF"), std::string::npos);
  EXPECT_NE(svg->find("ITL CDF"), std::string::npos);
  EXPECT_NE(svg->find("vs concurrency"), std::string::npos);
  EXPECT_NE(svg->find("alpha c=2"), std::string::npos);
  EXPECT_NE(svg->find("beta"), std::string::npos);
  EXPECT_FALSE(PlotSvg({}).ok());
  EXPECT_FALSE(PlotSvg({{"x", json::array()}}).ok());
}

TEST(PlotTest, NiceTicks) {
  EXPECT_EQ(NiceTicks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  std::vector<double> t = NiceTicks(0, 0.37, 6);
  EXPECT_DOUBLE_EQ(t.front(), 0);
  EXPECT_GE(t.back(), 0.37);
  EXPECT_LE(t.size(), 10u);
}

}  // namespace
}  // namespace weft::loadgen
