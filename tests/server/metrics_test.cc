#include "server/metrics.h"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "server/server_metrics.h"

namespace weft::server {
namespace {

// Checks the text exposition format line by line: every family has HELP
// then TYPE before its samples, and every sample line parses.
void ExpectValidExposition(const std::string& text) {
  static const std::regex kHelp(R"(^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) .*$)");
  static const std::regex kType(
      R"(^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$)");
  static const std::regex kSample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})? ([-+]?([0-9.]+([eE][-+]?[0-9]+)?|Inf|NaN))$)");
  std::istringstream in(text);
  std::string line, family, type;
  bool saw_help = false;
  int samples = 0;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_match(line, m, kHelp)) {
      family = m[1];
      saw_help = true;
      type.clear();
    } else if (std::regex_match(line, m, kType)) {
      ASSERT_TRUE(saw_help) << line;
      ASSERT_EQ(m[1], family) << line;
      type = m[2];
    } else {
      ASSERT_TRUE(std::regex_match(line, m, kSample)) << "bad line: " << line;
      ASSERT_FALSE(type.empty()) << "sample before TYPE: " << line;
      std::string name = m[1];
      if (type == "histogram") {
        ASSERT_TRUE(name == family + "_bucket" || name == family + "_sum" ||
                    name == family + "_count")
            << line;
      } else {
        ASSERT_EQ(name, family) << line;
      }
      samples++;
    }
  }
  EXPECT_GT(samples, 0);
}

TEST(MetricsTest, CounterGaugeHistogramRender) {
  MetricsRegistry r;
  r.GetCounter("req_total", "Requests.", {{"code", "200"}})->Inc(2);
  r.GetCounter("req_total", "Requests.", {{"code", "500"}})->Inc();
  r.GetGauge("temp", "A gauge with \"quotes\".")->Set(1.5);
  Histogram* h = r.GetHistogram("lat_seconds", "Latency.", {0.1, 1.0});
  h->Observe(0.05);
  h->Observe(0.1);  // le is inclusive
  h->Observe(5);
  std::string text = r.Render();
  ExpectValidExposition(text);
  EXPECT_NE(text.find("req_total{code=\"200\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("req_total{code=\"500\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("temp 1.5\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_sum 5.15\n"), std::string::npos);
  EXPECT_NE(text.find("lat_seconds_count 3\n"), std::string::npos);
  // One HELP per family.
  size_t first = text.find("# HELP req_total");
  EXPECT_EQ(text.find("# HELP req_total", first + 1), std::string::npos);
}

TEST(MetricsTest, SameNameAndLabelsIsSameMetric) {
  MetricsRegistry r;
  Counter* a = r.GetCounter("x_total", "X.", {{"a", "1"}});
  Counter* b = r.GetCounter("x_total", "X.", {{"a", "1"}});
  EXPECT_EQ(a, b);
  EXPECT_NE(a, r.GetCounter("x_total", "X.", {{"a", "2"}}));
}

TEST(MetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  MetricsRegistry r;
  r.GetGauge("g", "G.", {{"model_name", "we\"ird\nname"}})->Set(1);
  ExpectValidExposition(r.Render());
}

TEST(MetricsTest, ServerMetricsHaveVllmNames) {
  ServerMetrics m("my-model");
  m.RecordTtft(0.2);
  m.RecordFinish(FinishReason::kLength);
  Usage u;
  u.prompt_tokens = 5;
  u.completion_tokens = 7;
  m.RecordRequest(u, 1.0);
  BackendStats s;
  s.num_running = 2;
  s.num_waiting = 1;
  s.kv_blocks_total = 10;
  s.kv_blocks_used = 4;
  s.prefix_cache_queries = 100;
  s.prefix_cache_hits = 40;
  std::string text = m.Render(s, EngineInfo{}, 3);
  ExpectValidExposition(text);
  for (const char* line : {
           "vllm:num_requests_running{model_name=\"my-model\"} 2",
           "vllm:num_requests_waiting{model_name=\"my-model\"} 1",
           "vllm:kv_cache_usage_perc{model_name=\"my-model\"} 0.4",
           "vllm:prefix_cache_queries_total{model_name=\"my-model\"} 100",
           "vllm:prefix_cache_hits_total{model_name=\"my-model\"} 40",
           "vllm:prompt_tokens_total{model_name=\"my-model\"} 5",
           "vllm:generation_tokens_total{model_name=\"my-model\"} 7",
           "vllm:request_success_total{finished_reason=\"length\",model_name="
           "\"my-model\"} 1",
           "vllm:time_to_first_token_seconds_count{model_name=\"my-model\"} 1",
           "vllm:e2e_request_latency_seconds_count{model_name=\"my-model\"} 1",
           "weft_open_connections 3",
       }) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line;
  }
  EXPECT_NE(text.find("# TYPE vllm:inter_token_latency_seconds histogram"),
            std::string::npos);
  EXPECT_NE(text.find("# TYPE vllm:request_queue_time_seconds histogram"),
            std::string::npos);
}

// Speculative decoding's counters with vLLM's names, only when it is on.
TEST(MetricsTest, SpecDecodeCountersWhenSpeculationIsOn) {
  ServerMetrics m("my-model");
  BackendStats s;
  s.spec_num_drafts = 4;
  s.spec_num_draft_tokens = 12;
  s.spec_num_accepted_tokens = 7;
  s.spec_accepted_per_pos = {4, 2, 1};
  EXPECT_EQ(m.Render(s, EngineInfo{}, 0).find("spec_decode"),
            std::string::npos);
  EngineInfo e;
  e.spec_method = "ngram";
  const std::string text = m.Render(s, e, 0);
  ExpectValidExposition(text);
  for (const char* line : {
           "vllm:spec_decode_num_drafts_total{model_name=\"my-model\"} 4",
           "vllm:spec_decode_num_draft_tokens_total{model_name=\"my-model\"} 12",
           "vllm:spec_decode_num_accepted_tokens_total{model_name=\"my-model\"} 7",
           "vllm:spec_decode_num_accepted_tokens_per_pos{model_name=\"my-model\","
           "position=\"1\"} 2",
       }) {
    EXPECT_NE(text.find(std::string(line) + "\n"), std::string::npos) << line;
  }
}

// The series an inference gateway's endpoint picker reads besides the
// queue and KV gauges, with vLLM's names, labels and values.
TEST(MetricsTest, GatewayInfoSeriesFollowVllm) {
  ServerMetrics m("my-model");
  BackendStats s;
  EngineInfo e;
  // Before the KV geometry is known there is no cache_config_info.
  std::string text = m.Render(s, e, 0, 1764800000.5);
  ExpectValidExposition(text);
  EXPECT_EQ(text.find("vllm:cache_config_info"), std::string::npos);
  EXPECT_NE(text.find("vllm:lora_requests_info{max_lora=\"0\","
                      "running_lora_adapters=\"\",waiting_lora_adapters=\"\"}"
                      " 1764800000.5\n"),
            std::string::npos)
      << text;
  s.kv_blocks_total = 1234;
  s.kv_blocks_used = 0;
  e.kv_block_size = 16;
  e.kv_type = "f16";
  e.prefix_caching = true;
  text = m.Render(s, e, 0, 1764800001.0);
  ExpectValidExposition(text);
  EXPECT_NE(text.find("# TYPE vllm:cache_config_info gauge\n"
                      "vllm:cache_config_info{block_size=\"16\","
                      "cache_dtype=\"f16\",enable_prefix_caching=\"True\","
                      "engine=\"0\",num_gpu_blocks=\"1234\"} 1\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("running_lora_adapters=\"\",waiting_lora_adapters=\"\"}"
                      " 1764800001\n"),
            std::string::npos);
  EXPECT_NE(text.find("vllm:kv_cache_usage_perc{model_name=\"my-model\"} 0\n"),
            std::string::npos);
}

}  // namespace
}  // namespace weft::server
