#include "loadgen/runner.h"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/steady_timer.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "loadgen/arrivals.h"
#include "util/strings.h"

namespace weft::loadgen {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using json = nlohmann::json;

std::string RequestBody(const RunConfig& config, const PlannedRequest& req) {
  json j;
  if (!config.model.empty()) j["model"] = config.model;
  if (config.chat) {
    json messages = json::array();
    if (!req.prompt.system.empty()) {
      messages.push_back({{"role", "system"}, {"content", req.prompt.system}});
    }
    messages.push_back({{"role", "user"}, {"content", req.prompt.text}});
    j["messages"] = std::move(messages);
  } else if (!req.prompt.ids.empty()) {
    j["prompt"] = req.prompt.ids;
  } else {
    j["prompt"] = req.prompt.text;
  }
  j["max_tokens"] = req.max_tokens;
  j["temperature"] = 0;
  if (config.ignore_eos) j["ignore_eos"] = true;
  if (config.speculative) j["speculative"] = *config.speculative;
  j["stream"] = true;
  j["stream_options"] = {{"include_usage", true}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

// A one-line progress bar on stderr, redrawn at most every 100 ms.
class Progress {
 public:
  explicit Progress(bool enabled)
      : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

  // `fraction` < 0: unknown.
  void Update(const std::string& label, int64_t done, int64_t failed,
              double fraction, double elapsed, bool force = false) {
    if (!enabled_) return;
    Clock::time_point now = Clock::now();
    const double interval = tty_ ? 0.1 : 5.0;
    if (!force && now - last_ < std::chrono::duration<double>(interval)) return;
    last_ = now;
    constexpr int kWidth = 24;
    std::string bar;
    const int filled = fraction < 0 ? 0 : static_cast<int>(std::lround(std::clamp(fraction, 0.0, 1.0) * kWidth));
    for (int i = 0; i < kWidth; ++i) bar += i < filled ? '#' : '.';
    std::fprintf(stderr, "%s%-22s [%s] %5lld done %3lld failed %7.1f s%s",
                 tty_ ? "\r" : "", label.c_str(), bar.c_str(), (long long)done,
                 (long long)failed, elapsed, tty_ ? "" : "\n");
    std::fflush(stderr);
    drawn_ = true;
  }
  void EndLine() {
    if (enabled_ && drawn_ && tty_) std::fprintf(stderr, "\n");
    drawn_ = false;
  }

 private:
  bool enabled_;
  bool tty_;
  bool drawn_ = false;
  Clock::time_point last_{};
};

// One measured phase (warm-up or level) in progress.
struct Phase {
  LevelResult* level = nullptr;  // where results go
  std::string label;             // progress label
  int64_t limit = 0;             // closed/stall: requests to issue; <0 = no limit
  double deadline = 0;           // run-relative; 0 = none
  double start = 0;              // run-relative
  int64_t issued = 0;
  int64_t in_flight = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  bool stop = false;             // issue nothing more
  bool finished = false;
  // Open loop.
  std::vector<double> arrivals;  // relative to start
  size_t next_arrival = 0;
  std::unique_ptr<asio::steady_timer> timer;
  // Stall test.
  size_t longs_issued = 0;
  size_t longs_done = 0;
};

class Driver {
 public:
  Driver(const RunConfig& c, const WorkloadPlan& plan, asio::io_context& io,
         tcp::resolver::results_type addrs)
      : c_(c), plan_(plan), io_(io), addrs_(std::move(addrs)),
        progress_(c.progress) {}

  RunResult Run() {
    t0_ = Clock::now();
    BuildPhases();
    asio::post(io_, [this] { Advance(); });
    io_.run();
    progress_.EndLine();
    result_.warmup_s = warmup_level_.duration_s;
    for (const RequestResult& r : warmup_level_.requests) {
      if (!r.ok()) result_.warmup_failures++;
    }
    return std::move(result_);
  }

 private:
  using Done = std::function<void(RequestResult)>;
  struct PhaseSpec {
    enum Kind { kWarmup, kClosed, kOpen, kStall } kind;
    int64_t concurrency = 0;
    double rate = 0;
  };

  double Now() const { return Rel(Clock::now()); }
  double Rel(Clock::time_point t) const {
    return std::chrono::duration<double>(t - t0_).count();
  }
  int64_t DefaultLimit(int64_t c) const {
    if (c_.num_requests > 0) return c_.num_requests;
    if (c_.duration_s > 0) return -1;
    return 4 * c;
  }

  void BuildPhases() {
    if (c_.warmup > 0) specs_.push_back({PhaseSpec::kWarmup});
    if (c_.stall_test) {
      specs_.push_back({PhaseSpec::kStall, c_.background_streams});
    } else if (!c_.rates.empty()) {
      for (double r : c_.rates) specs_.push_back({PhaseSpec::kOpen, 0, r});
    } else {
      for (int64_t cc : c_.concurrency) specs_.push_back({PhaseSpec::kClosed, cc});
    }
    result_.levels.reserve(specs_.size());
  }

  const PlannedRequest& NextRequest() {
    return plan_.requests[static_cast<size_t>(next_request_++) % plan_.requests.size()];
  }

  void Advance() {
    progress_.EndLine();
    if (spec_index_ >= specs_.size()) return;  // io_.run() returns
    const PhaseSpec s = specs_[spec_index_++];
    phase_ = std::make_shared<Phase>();
    Phase& p = *phase_;
    p.start = Now();
    if (s.kind == PhaseSpec::kWarmup) {
      p.level = &warmup_level_;
      p.level->mode = "warmup";
      int64_t c = 1;
      for (int64_t cc : c_.concurrency) c = std::max(c, cc);
      if (c_.stall_test) c = c_.background_streams;
      p.level->concurrency = std::min<int64_t>(c, c_.warmup);
      p.limit = c_.warmup;
      p.label = "warm-up";
      return StartClosed(p.level->concurrency);
    }
    result_.levels.emplace_back();
    p.level = &result_.levels.back();
    p.level->started_at = p.start;
    if (s.kind == PhaseSpec::kClosed) {
      p.level->mode = "closed";
      p.level->concurrency = s.concurrency;
      p.limit = DefaultLimit(s.concurrency);
      if (c_.duration_s > 0) p.deadline = p.start + c_.duration_s;
      p.label = StrFormat("c=%lld", (long long)s.concurrency);
      return StartClosed(s.concurrency);
    }
    if (s.kind == PhaseSpec::kOpen) {
      p.level->mode = "open";
      p.level->rate = s.rate;
      ArrivalConfig ac{s.rate, c_.burstiness, c_.seed + spec_index_};
      int64_t n = c_.num_requests > 0 ? c_.num_requests : 0;
      if (n == 0 && c_.duration_s > 0) {
        n = static_cast<int64_t>(std::ceil(s.rate * c_.duration_s * 3)) + 16;
      }
      if (n == 0) n = static_cast<int64_t>(plan_.requests.size());
      p.arrivals = ArrivalTimes(ac, n);
      if (c_.duration_s > 0) {
        while (!p.arrivals.empty() && p.arrivals.back() > c_.duration_s) {
          p.arrivals.pop_back();
        }
      }
      p.limit = static_cast<int64_t>(p.arrivals.size());
      p.label = StrFormat("rate=%g/s", s.rate);
      p.timer = std::make_unique<asio::steady_timer>(io_);
      return ScheduleArrival(phase_);
    }
    // Stall test: background streams until every long request is done.
    p.level->mode = "stall";
    p.level->concurrency = s.concurrency;
    p.limit = -1;
    p.label = StrFormat("S2 %lld streams", (long long)s.concurrency);
    p.timer = std::make_unique<asio::steady_timer>(io_);
    StartClosed(s.concurrency);
    ScheduleLong(phase_);
  }

  void StartClosed(int64_t c) {
    std::shared_ptr<Phase> p = phase_;
    for (int64_t i = 0; i < std::max<int64_t>(c, 1); ++i) ClosedNext(p);
  }

  bool CanIssue(const Phase& p) const {
    if (p.stop) return false;
    if (p.limit >= 0 && p.issued >= p.limit) return false;
    if (p.deadline > 0 && Now() >= p.deadline) return false;
    return true;
  }

  void ClosedNext(std::shared_ptr<Phase> p) {
    if (!CanIssue(*p)) return MaybeFinish(p);
    p->issued++;
    Issue(p, NextRequest(), -1, [this, p](RequestResult r) {
      Record(p, std::move(r));
      ClosedNext(p);
    });
  }

  void ScheduleArrival(std::shared_ptr<Phase> p) {
    if (p->next_arrival >= p->arrivals.size()) return MaybeFinish(p);
    const double at = p->start + p->arrivals[p->next_arrival];
    p->timer->expires_at(t0_ + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(at)));
    p->timer->async_wait([this, p, at](const boost::system::error_code&) {
      p->next_arrival++;
      p->issued++;
      Issue(p, NextRequest(), at, [this, p](RequestResult r) {
        Record(p, std::move(r));
        MaybeFinish(p);
      });
      ScheduleArrival(p);
    });
  }

  void ScheduleLong(std::shared_ptr<Phase> p) {
    if (p->longs_issued >= plan_.long_requests.size()) return;
    const double at = p->start + c_.long_every_s * static_cast<double>(p->longs_issued + 1);
    p->timer->expires_at(t0_ + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(at)));
    p->timer->async_wait([this, p, at](const boost::system::error_code&) {
      const PlannedRequest& req = plan_.long_requests[p->longs_issued++];
      Issue(p, req, at, [this, p](RequestResult r) {
        Record(p, std::move(r));
        if (++p->longs_done >= plan_.long_requests.size()) p->stop = true;
        MaybeFinish(p);
      });
      ScheduleLong(p);
    });
  }

  void Record(const std::shared_ptr<Phase>& p, RequestResult r) {
    p->in_flight--;
    p->completed++;
    if (!r.ok()) p->failed++;
    p->level->requests.push_back(std::move(r));
    double fraction = -1;
    if (p->limit > 0) {
      fraction = static_cast<double>(p->completed) / static_cast<double>(p->limit);
    } else if (p->deadline > 0) {
      fraction = (Now() - p->start) / (p->deadline - p->start);
    }
    progress_.Update(p->label, p->completed, p->failed, fraction, Now() - p->start);
  }

  void MaybeFinish(const std::shared_ptr<Phase>& p) {
    if (p->finished || p->in_flight > 0) return;
    if (p->level->mode == "open") {
      if (p->next_arrival < p->arrivals.size()) return;
    } else if (p->level->mode == "stall") {
      if (!p->stop) return;
    } else if (CanIssue(*p)) {
      return;
    }
    p->finished = true;
    double first = 1e300, last = 0;
    for (const RequestResult& r : p->level->requests) {
      first = std::min(first, r.sent_at);
      last = std::max(last, r.sent_at + r.e2e);
    }
    p->level->duration_s = p->level->requests.empty() ? 0 : last - first;
    progress_.Update(p->label, p->completed, p->failed, 1.0, Now() - p->start, true);
    asio::post(io_, [this] { Advance(); });
  }

  void Issue(const std::shared_ptr<Phase>& p, const PlannedRequest& req,
             double scheduled_at, Done done) {
    p->in_flight++;
    struct Call {
      RequestResult r;
      std::unique_ptr<StreamAccumulator> acc;
      int status = 0;
      std::string error_body;
      Done done;
    };
    auto call = std::make_shared<Call>();
    call->r.index = next_index_++;
    call->r.group = req.group;
    call->r.prompt_tokens_planned = req.prompt.tokens;
    call->r.max_tokens = req.max_tokens;
    call->r.scheduled_at = scheduled_at;
    call->acc = std::make_unique<StreamAccumulator>(&call->r);
    call->done = std::move(done);
    HttpCallbacks cb;
    cb.on_status = [call](int s) {
      call->status = s;
      call->r.http_status = s;
    };
    cb.on_body = [this, call](std::string_view b, Clock::time_point at) {
      if (call->status == 200) {
        call->acc->OnBytes(b, Rel(at));
      } else if (call->error_body.size() < 400) {
        call->error_body.append(b.substr(0, 400));
      }
    };
    cb.on_end = [this, call](Clock::time_point at) {
      if (call->status != 200) {
        call->acc->Fail(FailureKind::kHttpStatus,
                        StrFormat("HTTP %d: %s", call->status,
                                  call->error_body.c_str()),
                        Rel(at));
      } else {
        call->acc->OnEnd(Rel(at));
      }
      Finish(call);
    };
    cb.on_error = [this, call](FailureKind kind, std::string msg,
                               Clock::time_point at) {
      call->acc->Fail(kind, std::move(msg), Rel(at));
      Finish(call);
    };
    const std::string path = c_.chat ? "/v1/chat/completions" : "/v1/completions";
    call->r.sent_at = Now();
    StartHttpCall(io_, addrs_, c_.endpoint, "POST", path, RequestBody(c_, req),
                  c_.timeout_s, std::move(cb));
  }

  template <typename CallPtr>
  static void Finish(CallPtr call) {
    Done done = std::move(call->done);
    call->acc.reset();
    done(std::move(call->r));
  }

  const RunConfig& c_;
  const WorkloadPlan& plan_;
  asio::io_context& io_;
  tcp::resolver::results_type addrs_;
  Progress progress_;
  Clock::time_point t0_;
  std::vector<PhaseSpec> specs_;
  size_t spec_index_ = 0;
  std::shared_ptr<Phase> phase_;
  LevelResult warmup_level_;
  RunResult result_;
  int64_t next_request_ = 0;
  int64_t next_index_ = 0;
};

}  // namespace

StatusOr<RunResult> RunBenchmark(const RunConfig& config,
                                 const WorkloadPlan& plan) {
  if (plan.requests.empty()) return InvalidArgumentError("the workload has no requests");
  if (config.stall_test && plan.long_requests.empty()) {
    return InvalidArgumentError("the stall test needs long requests");
  }
  for (double r : config.rates) {
    if (!(r > 0)) return InvalidArgumentError("rates must be positive");
  }
  for (int64_t c : config.concurrency) {
    if (c < 1) return InvalidArgumentError("concurrency must be at least 1");
  }
  asio::io_context io;
  ASSIGN_OR_RETURN(tcp::resolver::results_type addrs, Resolve(io, config.endpoint));
  Driver driver(config, plan, io, std::move(addrs));
  return driver.Run();
}

}  // namespace weft::loadgen
