// A small Prometheus metrics registry: counters, gauges and histograms with
// labels, rendered in the text exposition format (version 0.0.4).
//
// Thread safety: registration and Render() take the registry mutex; metric
// updates (Inc/Set/Observe) are lock-free atomics or a per-histogram mutex,
// so they may be called from any thread. Returned metric pointers stay valid
// for the registry's lifetime.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace weft::server {

using Labels = std::map<std::string, std::string>;

class Counter {
 public:
  void Inc(double v = 1.0);
  // For counters mirrored from elsewhere (e.g. engine totals).
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Inc(double v = 1.0);
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

// Cumulative buckets with upper bounds `bounds` (ascending) plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double v);
  struct Snapshot {
    std::vector<double> bounds;
    std::vector<uint64_t> cumulative;  // bounds.size() + 1 (last = +Inf)
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative
  double sum_ = 0;
  uint64_t count_ = 0;
};

class MetricsRegistry {
 public:
  // The same name + labels returns the same metric. A name must keep one
  // type and help text (CHECKed).
  Counter* GetCounter(const std::string& name, const std::string& help,
                      const Labels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help,
                  const Labels& labels = {});
  Histogram* GetHistogram(const std::string& name, const std::string& help,
                          const std::vector<double>& bounds,
                          const Labels& labels = {});

  // Text exposition: "# HELP", "# TYPE", then samples, per family in
  // registration order.
  std::string Render() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Family {
    std::string name;
    std::string help;
    Kind kind;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family* FamilyFor(const std::string& name, const std::string& help,
                    Kind kind);

  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Escapes a label value (\\, \", \n).
std::string EscapeLabelValue(const std::string& v);

}  // namespace weft::server
