// Speculative decoding on a real model (stories260K, or Gemma 3 270M in the
// e2e binary): the n-gram proposer's guesses, verified in the normal pass,
// must not change any token. Greedy output equals speculation off, alone
// and batched, chunked, with prefix hits, with aborts; seeded sampling
// equals it too (one random draw per emitted token either way) and does not
// depend on the batch; and the next-token distribution with speculation
// matches the one without over many seeds (chi-square, p > 0.01).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>

#include "tests/engine/model_harness.h"
#include "tests/engine/test_model.h"

namespace weft::engine {
namespace {

using testing::EchoPrompt;
using testing::ExpectFinishedOnce;
using testing::GreedyJob;
using testing::Job;
using testing::kGemma;
using testing::kHi;
using testing::kLo;
using testing::LoadedModel;
using testing::ModelPath;
using testing::RandomPrompt;
using testing::RunJobs;
using testing::RunResult;
using testing::RunSetup;
using testing::SpecGreedyJobs;

#define REQUIRE_MODEL()                      \
  const model::Model* model = LoadedModel(); \
  if (model == nullptr) GTEST_SKIP() << "no " << ModelPath();

constexpr int kMaxTokens = kGemma ? 16 : 40;

// The server's layout on Gemma (f16, local group for the sliding-window
// layers); f32 on stories260K.
RunSetup SpecSetup(const model::Model& m, bool spec) {
  RunSetup s = testing::DefaultSetup();
  if (kGemma) {
    s.exec.kv_type = model::KvType::kF16;
    s.kv.local_window = static_cast<int>(m.config().sliding_window);
    s.kv.local_num_blocks = s.kv.num_blocks;
  }
  if (spec) {
    s.sched.spec_method = SpecMethod::kNgram;
    s.sched.spec_k_max = 5;
    s.sched.spec_adaptive = false;  // verify every guess
  }
  return s;
}

void ExpectDone(const RunResult& r) {
  ExpectFinishedOnce(r);
  if (!r.status.ok()) return;
  EXPECT_EQ(r.kv.num_used, 0);  // every block back (free or idle-cached)
}

TEST(SpecModelTest, GreedyEqualsSpeculationOff) {
  REQUIRE_MODEL();
  const std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  const RunResult ref = RunJobs(*model, SpecSetup(*model, false), jobs, false);
  ExpectDone(ref);
  struct Variant {
    const char* name;
    int chunk;
    bool concurrent;
  };
  int64_t accepted = 0, rejected = 0;
  for (const Variant& v :
       {Variant{"alone", 0, false}, Variant{"batched", 0, true},
        Variant{"chunked", 7, true}}) {
    SCOPED_TRACE(v.name);
    RunSetup s = SpecSetup(*model, true);
    s.sched.prefill_chunk = v.chunk;
    const RunResult r = RunJobs(*model, s, jobs, v.concurrent);
    ExpectDone(r);
    for (const Job& j : jobs) {
      EXPECT_EQ(r.outcomes.at(j.id).tokens, ref.outcomes.at(j.id).tokens)
          << "request " << j.id;
    }
    accepted += r.stats.spec_num_accepted_tokens;
    rejected +=
        r.stats.spec_num_draft_tokens - r.stats.spec_num_accepted_tokens;
  }
  std::printf("drafts accepted %lld, rejected %lld\n", (long long)accepted,
              (long long)rejected);
  EXPECT_GT(accepted, 0);  // speculation did emit runs
  EXPECT_GT(rejected, 0);  // and rolled back wrong guesses
}

// Requests sharing a prefix: the second finds the first's blocks (which
// held guesses before they were verified) in the prefix cache.
TEST(SpecModelTest, PrefixHitsAndAbortsEqualSpeculationOff) {
  REQUIRE_MODEL();
  const std::vector<TokenId> prefix = EchoPrompt(7, 40);
  std::vector<Job> jobs;
  for (int i = 0; i < 6; ++i) {
    std::vector<TokenId> p = prefix;
    for (TokenId t : RandomPrompt(60 + i, 1 + i, kLo, kHi)) p.push_back(t);
    jobs.push_back(GreedyJob(20 + i, p, kMaxTokens));
  }
  const RunResult ref = RunJobs(*model, SpecSetup(*model, false), jobs, false);
  ExpectDone(ref);
  const RunResult seq = RunJobs(*model, SpecSetup(*model, true), jobs, false);
  ExpectDone(seq);
  EXPECT_GT(seq.kv.prefix_hit_tokens, 0);
  std::vector<Job> aborting = jobs;
  for (size_t i = 0; i < aborting.size(); i += 2) aborting[i].abort_after = 3;
  const RunResult conc =
      RunJobs(*model, SpecSetup(*model, true), aborting, true);
  ExpectDone(conc);
  for (const Job& j : aborting) {
    const std::vector<TokenId>& want = ref.outcomes.at(j.id).tokens;
    EXPECT_EQ(seq.outcomes.at(j.id).tokens, want) << j.id;
    const std::vector<TokenId>& got = conc.outcomes.at(j.id).tokens;
    if (j.abort_after > 0) {
      ASSERT_LE(got.size(), want.size());
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << j.id;
    } else {
      EXPECT_EQ(got, want) << j.id;
    }
  }
  EXPECT_GT(seq.stats.spec_num_accepted_tokens, 0);
}

// Seeded sampling: speculation consumes one draw per emitted token, as
// decoding without it does, so the tokens are the same; and a sequence's
// tokens do not depend on the batch.
TEST(SpecModelTest, SeededSamplingEqualsSpeculationOffAndBatch) {
  REQUIRE_MODEL();
  std::vector<Job> jobs = SpecGreedyJobs(kMaxTokens);
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].sampling.temperature = 0.7f;
    jobs[i].sampling.seed = 77 + i;
    jobs[i].sampling.top_k = 40;
    jobs[i].sampling.repetition_penalty = i % 2 ? 1.1f : 1.0f;
  }
  const RunResult ref = RunJobs(*model, SpecSetup(*model, false), jobs, false);
  const RunResult alone = RunJobs(*model, SpecSetup(*model, true), jobs, false);
  const RunResult batch = RunJobs(*model, SpecSetup(*model, true), jobs, true);
  ExpectDone(ref);
  ExpectDone(alone);
  ExpectDone(batch);
  for (const Job& j : jobs) {
    EXPECT_EQ(alone.outcomes.at(j.id).tokens, ref.outcomes.at(j.id).tokens)
        << j.id;
    EXPECT_EQ(batch.outcomes.at(j.id).tokens, alone.outcomes.at(j.id).tokens)
        << j.id;
  }
  EXPECT_GT(batch.stats.spec_num_drafts, 0);
}

// Upper tail of the chi-square distribution with `dof` degrees of freedom
// at x (Wilson-Hilferty: accurate to ~1e-3 for dof >= 3).
double ChiSquarePValue(double x, int dof) {
  const double k = dof;
  const double z =
      (std::cbrt(x / k) - (1 - 2 / (9 * k))) / std::sqrt(2 / (9 * k));
  return 0.5 * std::erfc(z / std::sqrt(2.0));
}

// The distribution of what verification emits: the last of 6 output
// tokens (its path went through several verifying passes) over many seeds,
// with and without speculation (different seeds), is homogeneous. Only on
// the small-vocabulary model (stories260K, 512 ids).
TEST(SpecModelTest, SampledDistributionMatchesWithoutSpeculation) {
  if (kGemma) GTEST_SKIP() << "on the small-vocabulary model only";
  REQUIRE_MODEL();
  constexpr int kDraws = 1500;
  constexpr int kOut = 6;
  // A prompt that holds many of the ids the model emits, so the proposer
  // often finds the last token in it and guesses what followed.
  const std::vector<TokenId> prompt = EchoPrompt(11, 80);
  std::map<TokenId, int> counts[2];
  int64_t drafts = 0;
  for (int spec = 0; spec < 2; ++spec) {
    std::vector<Job> jobs;
    for (int i = 0; i < kDraws; ++i) {
      Job j;
      j.id = i;
      j.prompt = prompt;
      j.max_tokens = kOut;
      j.sampling.temperature = 0.8f;
      j.sampling.seed = static_cast<uint64_t>(1 + i + spec * kDraws);
      jobs.push_back(std::move(j));
    }
    RunSetup s = SpecSetup(*model, spec == 1);
    s.sched.max_queue = 2 * kDraws;
    const RunResult r = RunJobs(*model, s, jobs, /*concurrent=*/true);
    ExpectDone(r);
    for (const auto& [id, o] : r.outcomes) {
      ASSERT_EQ(o.tokens.size(), size_t(kOut));
      ++counts[spec][o.tokens.back()];
    }
    if (spec == 1) drafts = r.stats.spec_num_drafts;
  }
  EXPECT_GT(drafts, kDraws / 3);  // many paths went through verification
  // Bins: tokens seen >= 10 times in all; the rest pooled.
  std::map<TokenId, int> total;
  for (int s = 0; s < 2; ++s) {
    for (const auto& [k, n] : counts[s]) total[k] += n;
  }
  std::vector<std::array<double, 2>> bins;
  std::array<double, 2> rest = {0, 0};
  for (const auto& [k, n] : total) {
    std::array<double, 2> b = {double(counts[0][k]), double(counts[1][k])};
    if (n >= 10) {
      bins.push_back(b);
    } else {
      rest[0] += b[0];
      rest[1] += b[1];
    }
  }
  if (rest[0] + rest[1] > 0) bins.push_back(rest);
  ASSERT_GE(bins.size(), 4u) << "too few outcomes to test";
  // Two samples of equal size: chi2 = sum (a - b)^2 / (a + b).
  double chi2 = 0;
  for (const auto& b : bins) {
    if (b[0] + b[1] > 0) chi2 += (b[0] - b[1]) * (b[0] - b[1]) / (b[0] + b[1]);
  }
  const int dof = static_cast<int>(bins.size()) - 1;
  const double p = ChiSquarePValue(chi2, dof);
  std::printf("chi2 %.2f, %d dof, p %.4f\n", chi2, dof, p);
  EXPECT_GT(p, 0.01);
}

}  // namespace
}  // namespace weft::engine
