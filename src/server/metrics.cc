#include "server/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "util/check.h"

namespace weft::server {

namespace {

void AtomicAdd(std::atomic<double>& a, double v) {
  double cur = a.load(std::memory_order_relaxed);
  while (!a.compare_exchange_weak(cur, cur + v, std::memory_order_relaxed)) {
  }
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);  // shortest exact
  return std::string(buf, res.ptr);
}

std::string LabelText(const Labels& labels, const std::string& extra_key = "",
                      const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) return "";
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (!first) out += ",";
    first = false;
    out += k + "=\"" + EscapeLabelValue(v) + "\"";
  }
  if (!extra_key.empty()) {
    if (!first) out += ",";
    out += extra_key + "=\"" + EscapeLabelValue(extra_value) + "\"";
  }
  return out + "}";
}

// Prometheus text format: backslash and newline escaped, and the double
// quote too inside a label value (not in HELP text).
std::string Escape(const std::string& text, bool quote) {
  std::string out;
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (quote && c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(const std::string& h) { return Escape(h, false); }

// A series' metric, made with `args` the first time its labels are seen.
template <typename T, typename... Args>
T* CreateOnce(std::unique_ptr<T>& slot, const Args&... args) {
  if (!slot) slot = std::make_unique<T>(args...);
  return slot.get();
}

}  // namespace

std::string EscapeLabelValue(const std::string& v) { return Escape(v, true); }

void Counter::Inc(double v) {
  DCHECK(v >= 0);
  AtomicAdd(value_, v);
}

void Gauge::Inc(double v) { AtomicAdd(value_, v); }

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {
  CHECK(std::is_sorted(bounds_.begin(), bounds_.end()));
}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) -
             bounds_.begin();  // first bound >= v ("le" semantics)
  std::lock_guard<std::mutex> lock(mu_);
  counts_[i]++;
  sum_ += v;
  count_++;
}

Histogram::Snapshot Histogram::snapshot() const {
  Snapshot s;
  s.bounds = bounds_;
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t acc = 0;
  for (uint64_t c : counts_) {
    acc += c;
    s.cumulative.push_back(acc);
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

MetricsRegistry::Family* MetricsRegistry::FamilyFor(const std::string& name,
                                                    const std::string& help,
                                                    Kind kind) {
  for (auto& f : families_) {
    if (f->name == name) {
      CHECK(f->kind == kind) << "metric " << name << " registered twice";
      return f.get();
    }
  }
  families_.push_back(std::make_unique<Family>());
  Family* f = families_.back().get();
  f->name = name;
  f->help = help;
  f->kind = kind;
  return f;
}

Counter* MetricsRegistry::GetCounter(const std::string& name,
                                     const std::string& help,
                                     const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return CreateOnce(FamilyFor(name, help, Kind::kCounter)->counters[labels]);
}

Gauge* MetricsRegistry::GetGauge(const std::string& name,
                                 const std::string& help,
                                 const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return CreateOnce(FamilyFor(name, help, Kind::kGauge)->gauges[labels]);
}

Histogram* MetricsRegistry::GetHistogram(const std::string& name,
                                         const std::string& help,
                                         const std::vector<double>& bounds,
                                         const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  return CreateOnce(FamilyFor(name, help, Kind::kHistogram)->histograms[labels], bounds);
}

std::string MetricsRegistry::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    const char* type = f->kind == Kind::kCounter ? "counter"
                       : f->kind == Kind::kGauge ? "gauge"
                                                 : "histogram";
    out += "# HELP " + f->name + " " + EscapeHelp(f->help) + "\n";
    out += "# TYPE " + f->name + " " + type + "\n";
    for (const auto& [labels, c] : f->counters) {
      out += f->name + LabelText(labels) + " " + FormatValue(c->value()) +
             "\n";
    }
    for (const auto& [labels, g] : f->gauges) {
      out += f->name + LabelText(labels) + " " + FormatValue(g->value()) +
             "\n";
    }
    for (const auto& [labels, h] : f->histograms) {
      Histogram::Snapshot s = h->snapshot();
      for (size_t i = 0; i <= s.bounds.size(); ++i) {
        std::string le = i < s.bounds.size() ? FormatValue(s.bounds[i])
                                             : std::string("+Inf");
        out += f->name + "_bucket" + LabelText(labels, "le", le) + " " +
               std::to_string(s.cumulative[i]) + "\n";
      }
      out += f->name + "_sum" + LabelText(labels) + " " + FormatValue(s.sum) +
             "\n";
      out += f->name + "_count" + LabelText(labels) + " " +
             std::to_string(s.count) + "\n";
    }
  }
  return out;
}

}  // namespace weft::server
