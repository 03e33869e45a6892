// End-to-end tests of `weft bench engine` (the real binary) on stories260K:
// a sweep completes every request and writes one JSON record per point;
// bad usage exits 2 with a one-line error.
#include <gtest/gtest.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fstream>
#include <sstream>
#include <string>

namespace {

constexpr const char* kVerb = " bench engine ";

struct Result {
  int rc = -1;
  std::string out;
  std::string err;
};

std::string Stories() {
  return std::string(WEFT_SHARED_MODELS_DIR) + "/stories260K.gguf";
}

bool Exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Result RunBench(const std::string& args) {
  const std::string err_path = ::testing::TempDir() + "/weft_bench_engine_err.txt";
  const std::string cmd =
      std::string(WEFT_BINARY) + kVerb + args + " 2>'" + err_path + "'";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = ReadAll(err_path);
  return r;
}

int Count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos;
       at = s.find(what, at + 1)) {
    ++n;
  }
  return n;
}

TEST(BenchEngineE2eTest, SweepWritesOneRecordPerPoint) {
  if (!Exists(Stories())) GTEST_SKIP() << "no " << Stories();
  const std::string json = ::testing::TempDir() + "/bench_engine.json";
  std::remove(json.c_str());
  Result r = RunBench("-m '" + Stories() +
                      "' --num-requests 6 --prompt-len 20 --output-len 8 "
                      "--concurrency 1,3 --prefill-chunk 0,7 -t 2 --json '" +
                      json + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(Count(r.out, "tok/s"), 4) << r.out;
  const std::string j = ReadAll(json);
  EXPECT_EQ(Count(j, "\"completed\": 6, \"failed\": 0"), 4) << j;
  EXPECT_EQ(Count(j, "\"output_tokens\": 48"), 4) << j;
  EXPECT_EQ(Count(j, "\"prompt_tokens\": 120"), 4) << j;
  EXPECT_EQ(Count(j, "\"prefill_chunk\": 7"), 2) << j;
  EXPECT_EQ(Count(j, "\"concurrency\": 3"), 2) << j;
  EXPECT_EQ(Count(j, "\"ttft_ms\": {\"p50\""), 4) << j;
  EXPECT_EQ(Count(j, "\"itl_ms\": {\"p50\""), 4) << j;
}

TEST(BenchEngineE2eTest, PoissonArrivals) {
  if (!Exists(Stories())) GTEST_SKIP() << "no " << Stories();
  Result r = RunBench("-m '" + Stories() +
                      "' --num-requests 5 --prompt-len 9 --output-len 4 "
                      "--rate 200 -t 1");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("rate 200/s"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("5 ok"), std::string::npos) << r.out;
}

TEST(BenchEngineE2eTest, TraceHasOneRequestRecordPerRequestPerRun) {
  if (!Exists(Stories())) GTEST_SKIP() << "no " << Stories();
  const std::string trace = ::testing::TempDir() + "/bench_engine_trace.jsonl";
  std::remove(trace.c_str());
  Result r = RunBench("-m '" + Stories() +
                      "' --num-requests 5 --prompt-len 12 --output-len 3 "
                      "--concurrency 2 --prefill-chunk 0,5 -t 1 --trace '" +
                      trace + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  const std::string t = ReadAll(trace);
  EXPECT_EQ(Count(t, "{\"ev\":\"start\""), 2) << t;  // warm-ups untraced
  EXPECT_EQ(Count(t, "{\"ev\":\"request\""), 10) << t;
  EXPECT_EQ(Count(t, "\"generated_tokens\":3,"), 10) << t;
  EXPECT_EQ(Count(t, "\"prefill_chunk\":5,"), 1) << t;
  EXPECT_EQ(Count(t, "\n"), Count(t, "}\n")) << "partial line: " << t;
}

TEST(BenchEngineE2eTest, BadUsageExits2) {
  for (const std::string& args :
       {std::string("--concurrency x"), std::string("--num-requests 0"),
        std::string("--max-seqs 8 --max-batched-tokens 4"),
        std::string("-m /nonexistent.gguf"), std::string("extra-arg"),
        std::string("--workload S3"),
        std::string("--workload S2 --s2-interval -1")}) {
    Result r = RunBench(args);
    EXPECT_EQ(r.rc, 2) << args << ": " << r.err;
    EXPECT_EQ(Count(r.err, "\n"), 1) << args << ": " << r.err;
  }
}

}  // namespace
