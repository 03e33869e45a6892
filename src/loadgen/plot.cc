#include "loadgen/plot.h"

#include <algorithm>
#include <cmath>

#include "loadgen/compare.h"
#include "loadgen/report.h"
#include "loadgen/stats.h"
#include "util/strings.h"

namespace weft::loadgen {

using json = nlohmann::json;

namespace {

constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                   "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
                                   "#bcbd22", "#17becf"};
constexpr int kNumColors = 10;

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

struct Series {
  std::string name;
  std::string color;
  std::vector<std::pair<double, double>> points;  // data coordinates
  bool markers = false;
};

// One chart: axes, ticks, series and a legend, at (x0, y0) of size w x h.
void Chart(std::string* svg, double x0, double y0, double w, double h,
           const std::string& title, const std::string& xlabel,
           const std::string& ylabel, const std::vector<Series>& series) {
  const double left = x0 + 60, right = x0 + w - 10, top = y0 + 28,
               bottom = y0 + h - 40;
  double xmin = 1e300, xmax = -1e300, ymin = 0, ymax = -1e300;
  for (const Series& s : series) {
    for (auto [x, y] : s.points) {
      xmin = std::min(xmin, x);
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  }
  *svg += StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
                    x0 + 10, y0 + 16, Escape(title).c_str());
  if (xmin > xmax) {
    *svg += StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">no data</text>\n",
                      left + 10, (top + bottom) / 2);
    return;
  }
  xmin = std::min(xmin, 0.0);
  if (xmax <= xmin) xmax = xmin + 1;
  if (ymax <= ymin) ymax = ymin + 1;
  std::vector<double> xt = NiceTicks(xmin, xmax), yt = NiceTicks(ymin, ymax);
  xmax = std::max(xmax, xt.back());
  ymax = std::max(ymax, yt.back());
  auto X = [&](double x) { return left + (x - xmin) / (xmax - xmin) * (right - left); };
  auto Y = [&](double y) { return bottom - (y - ymin) / (ymax - ymin) * (bottom - top); };
  *svg += StrFormat("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#333\"/>\n",
                    left, top, right - left, bottom - top);
  for (double t : xt) {
    *svg += StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n",
                      X(t), top, X(t), bottom, X(t), bottom + 14, t);
  }
  for (double t : yt) {
    *svg += StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%g</text>\n",
                      left, Y(t), right, Y(t), left - 4, Y(t) + 3, t);
  }
  *svg += StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%s</text>\n",
                    (left + right) / 2, bottom + 30, Escape(xlabel).c_str());
  *svg += StrFormat("<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\" "
                    "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n",
                    x0 + 14, (top + bottom) / 2, x0 + 14, (top + bottom) / 2,
                    Escape(ylabel).c_str());
  double ly = top + 14;
  for (const Series& s : series) {
    std::string pts;
    for (auto [x, y] : s.points) pts += StrFormat("%.1f,%.1f ", X(x), Y(y));
    *svg += StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"%s\"/>\n",
                      s.color.c_str(), pts.c_str());
    if (s.markers) {
      for (auto [x, y] : s.points) {
        *svg += StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                          X(x), Y(y), s.color.c_str());
      }
    }
    *svg += StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" font-size=\"10\">%s</text>\n",
                      right - 170, ly - 3, right - 150, ly - 3, s.color.c_str(),
                      right - 145, ly, Escape(s.name).c_str());
    ly += 13;
  }
}

// CDF points of `values` (ms), at most ~200 of them.
std::vector<std::pair<double, double>> Cdf(std::vector<double> values) {
  std::vector<std::pair<double, double>> out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  const size_t step = std::max<size_t>(1, n / 200);
  for (size_t i = 0; i < n; i += step) {
    out.emplace_back(values[i], static_cast<double>(i + 1) / n);
  }
  out.emplace_back(values.back(), 1.0);
  return out;
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int target) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = std::floor(lo / step) * step; t < hi + step * 0.999; t += step) {
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return ticks;
}

StatusOr<std::string> PlotSvg(const std::vector<PlotRun>& runs) {
  if (runs.empty()) return InvalidArgumentError("nothing to plot");
  std::vector<Series> ttft, itl, thr;
  bool open = false, goodput = false;
  int color = 0, run_color = 0;
  for (const PlotRun& run : runs) {
    RETURN_IF_ERROR(ValidateResult(run.doc));
    Series curve;
    curve.name = run.label;
    curve.color = kColors[run_color++ % kNumColors];
    curve.markers = true;
    for (const json& l : run.doc["levels"]) {
      std::vector<double> t, i;
      if (l.contains("samples")) {
        for (const json& s : l["samples"]) {
          if (!s.value("ok", false)) continue;
          if (s["ttft_s"].is_number()) t.push_back(s["ttft_s"].get<double>() * 1000);
          if (s["itl_s"].is_array()) {
            for (const json& g : s["itl_s"]) {
              if (g.is_number()) i.push_back(g.get<double>() * 1000);
            }
          }
        }
      }
      const std::string name = run.label + " " + LevelName(l);
      const std::string c = kColors[color++ % kNumColors];
      ttft.push_back({name, c, Cdf(t)});
      itl.push_back({name, c, Cdf(i)});
      const json& s = l["summary"];
      if (l.value("mode", "") == "open") {
        open = true;
        double y = s.value("request_throughput", 0.0);
        if (s.contains("goodput") && s["goodput"].is_number()) {
          y = s["goodput"].get<double>();
          goodput = true;
        }
        curve.points.emplace_back(l.value("rate", 0.0), y);
      } else {
        curve.points.emplace_back(static_cast<double>(l.value("concurrency", 0)),
                                  s.value("output_throughput", 0.0));
      }
    }
    std::sort(curve.points.begin(), curve.points.end());
    thr.push_back(std::move(curve));
  }
  const double w = 900, h = 330;
  std::string svg = StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "font-family=\"sans-serif\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
      w, 3 * h);
  Chart(&svg, 0, 0, w, h, "TTFT CDF", "TTFT (ms)", "fraction of requests", ttft);
  Chart(&svg, 0, h, w, h, "ITL CDF", "inter-token latency (ms)", "fraction of tokens", itl);
  if (open) {
    Chart(&svg, 0, 2 * h, w, h,
          goodput ? "Goodput vs offered rate" : "Throughput vs offered rate",
          "offered rate (requests/s)",
          goodput ? "goodput (requests/s)" : "requests/s", thr);
  } else {
    Chart(&svg, 0, 2 * h, w, h, "Output throughput vs concurrency",
          "concurrency", "output tokens/s", thr);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace weft::loadgen
