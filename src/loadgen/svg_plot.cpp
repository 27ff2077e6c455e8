#include "loadgen/svg_plot.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace strata::loadgen {
namespace {

constexpr std::array<const char*, 8> kColors = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                                "#9467bd", "#8c564b", "#e377c2", "#17becf"};
constexpr size_t kMaxCdfPoints = 1000;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

std::string tick_label(double v) {
  char buf[32];
  if (v != 0.0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-2)) {
    std::snprintf(buf, sizeof(buf), "%.0e", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%g", v);
  }
  return buf;
}

std::string text(double x, double y, const std::string& s, const char* anchor, int size,
                 const char* extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" font-size=\"" + std::to_string(size) +
         "\" text-anchor=\"" + anchor + "\"" + extra + ">" + xml_escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* stroke,
                 const char* extra = "") {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" stroke=\"" + stroke + "\"" + extra + "/>\n";
}

struct Box {
  double x, y, w, h;  // plot area inside a panel
};

// A boxed legend, one row per item, in the bottom-right corner of the plot
// area (where a CDF never is: large x, small fraction).
std::string legend(const Box& b, const std::vector<std::pair<std::string, const char*>>& items) {
  double width = 0;
  for (const auto& it : items) width = std::max(width, 7.0 * static_cast<double>(it.first.size()));
  const double h = 16.0 * static_cast<double>(items.size()) + 6;
  const double x = b.x + b.w - width - 34;
  const double top = b.y + b.h - h - 4;
  std::string s = "<rect x=\"" + num(x - 6) + "\" y=\"" + num(top) + "\" width=\"" +
                  num(width + 38) + "\" height=\"" + num(h) +
                  "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#bbb\"/>\n";
  double y = top + 16;
  for (const auto& [label, color] : items) {
    s += line(x, y - 4, x + 20, y - 4, color, " stroke-width=\"2\"");
    s += text(x + 26, y, label, "start", 11);
    y += 16;
  }
  return s;
}

// A one-row legend above the plot area, right-aligned.
std::string legend_row(const Box& b,
                       const std::vector<std::pair<std::string, const char*>>& items) {
  std::string s;
  double x = b.x + b.w;
  for (auto it = items.rbegin(); it != items.rend(); ++it) {
    x -= 7.0 * static_cast<double>(it->first.size()) + 40;
    s += line(x, b.y - 8, x + 20, b.y - 8, it->second, " stroke-width=\"2\"");
    s += text(x + 26, b.y - 4, it->first, "start", 11);
  }
  return s;
}

// Axes with ticks: x ticks at data values xt (positions from fx), left y
// ticks yt (positions from fy).
template <typename FX, typename FY>
std::string axes(const Box& b, const std::vector<double>& xt, FX fx,
                 const std::vector<std::string>& xt_labels, const std::vector<double>& yt, FY fy,
                 const std::string& x_label, const std::string& y_label) {
  std::string s;
  s += "<rect x=\"" + num(b.x) + "\" y=\"" + num(b.y) + "\" width=\"" + num(b.w) + "\" height=\"" +
       num(b.h) + "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (size_t i = 0; i < xt.size(); ++i) {
    const double x = fx(xt[i]);
    s += line(x, b.y, x, b.y + b.h, "#e5e5e5");
    s += line(x, b.y + b.h, x, b.y + b.h + 5, "#333");
    s += text(x, b.y + b.h + 17, xt_labels[i], "middle", 11);
  }
  for (double v : yt) {
    const double y = fy(v);
    s += line(b.x, y, b.x + b.w, y, "#e5e5e5");
    s += line(b.x - 5, y, b.x, y, "#333");
    s += text(b.x - 8, y + 4, tick_label(v), "end", 11);
  }
  s += text(b.x + b.w / 2, b.y + b.h + 34, x_label, "middle", 12);
  const double ly = b.y + b.h / 2;
  s += text(b.x - 44, ly, y_label, "middle", 12,
            (" transform=\"rotate(-90 " + num(b.x - 44) + " " + num(ly) + ")\"").c_str());
  return s;
}

std::string cdf_panel(double px, double py, const std::string& title, const std::string& x_label,
                      const std::vector<const std::vector<double>*>& series,
                      const std::vector<std::string>& labels) {
  const Box b{px + 62, py + 30, 380, 230};
  double max_v = 0.0;
  for (const auto* v : series) {
    for (double x : *v) max_v = std::max(max_v, x);
  }
  const std::vector<double> xt = nice_ticks(max_v > 0 ? max_v : 1.0, 5);
  const double x_max = xt.back();
  auto fx = [&](double v) { return b.x + v / x_max * b.w; };
  auto fy = [&](double p) { return b.y + b.h - p * b.h; };
  std::vector<std::string> xl;
  for (double v : xt) xl.push_back(tick_label(v));
  std::string s = "<g class=\"panel\">\n";
  s += text(b.x + b.w / 2, py + 20, title, "middle", 14, " font-weight=\"bold\"");
  s += axes(b, xt, fx, xl, {0.0, 0.25, 0.5, 0.75, 1.0}, fy, x_label, "fraction of samples");
  std::vector<std::pair<std::string, const char*>> items;
  for (size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % kColors.size()];
    items.emplace_back(labels[k], color);
    std::vector<double> v = *series[k];
    if (v.empty()) continue;
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    const size_t steps = std::min(n, kMaxCdfPoints);
    std::string pts = num(fx(v[0])) + "," + num(fy(0.0));
    for (size_t i = 0; i < steps; ++i) {
      // The step at sample index idx: the CDF rises from idx/n to (idx+1)/n.
      const size_t idx = steps == n ? i : (i * (n - 1)) / (steps - 1 == 0 ? 1 : steps - 1);
      const double x = fx(v[idx]);
      pts += " " + num(x) + "," + num(fy(static_cast<double>(idx) / n));
      pts += " " + num(x) + "," + num(fy(static_cast<double>(idx + 1) / n));
    }
    s += "<polyline class=\"series\" data-label=\"" + xml_escape(labels[k]) +
         "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.8\" points=\"" + pts +
         "\"/>\n";
  }
  if (!items.empty()) s += legend(b, items);
  s += "</g>\n";
  return s;
}

std::string sweep_panel(double px, double py, const std::vector<SweepPoint>& pts) {
  const Box b{px + 70, py + 46, 820, 234};
  double max_tok = 0.0, max_tpot = 0.0;
  for (const SweepPoint& p : pts) {
    max_tok = std::max(max_tok, p.output_tok_s);
    max_tpot = std::max(max_tpot, p.mean_tpot_ms);
  }
  const std::vector<double> lt = nice_ticks(max_tok > 0 ? max_tok : 1.0, 5);
  const std::vector<double> rt = nice_ticks(max_tpot > 0 ? max_tpot : 1.0, 5);
  const auto n = static_cast<double>(pts.size());
  // Concurrencies are evenly spaced categories (sweeps are usually 1,2,4,...).
  auto fx = [&](double i) { return b.x + (i + 0.5) / n * b.w; };
  auto fyl = [&](double v) { return b.y + b.h - v / lt.back() * b.h; };
  auto fyr = [&](double v) { return b.y + b.h - v / rt.back() * b.h; };
  std::vector<double> xt;
  std::vector<std::string> xl;
  for (size_t i = 0; i < pts.size(); ++i) {
    xt.push_back(static_cast<double>(i));
    xl.push_back(std::to_string(pts[i].concurrency));
  }
  std::string s = "<g class=\"panel\">\n";
  s += text(b.x + b.w / 2, py + 20, "Output throughput and mean TPOT vs concurrency", "middle", 14,
            " font-weight=\"bold\"");
  s += axes(b, xt, fx, xl, lt, fyl, "max concurrency", "output tokens/s");
  // Right axis for TPOT.
  for (double v : rt) {
    const double y = fyr(v);
    s += line(b.x + b.w, y, b.x + b.w + 5, y, "#333");
    s += text(b.x + b.w + 8, y + 4, tick_label(v), "start", 11);
  }
  const double ry = b.y + b.h / 2, rx = b.x + b.w + 50;
  s += text(rx, ry, "mean TPOT (ms)", "middle", 12,
            (" transform=\"rotate(90 " + num(rx) + " " + num(ry) + ")\"").c_str());
  const char* c_tok = kColors[0];
  const char* c_tpot = kColors[1];
  std::string p_tok, p_tpot, marks;
  for (size_t i = 0; i < pts.size(); ++i) {
    const double x = fx(static_cast<double>(i));
    const double y1 = fyl(pts[i].output_tok_s), y2 = fyr(pts[i].mean_tpot_ms);
    p_tok += (i ? " " : "") + num(x) + "," + num(y1);
    p_tpot += (i ? " " : "") + num(x) + "," + num(y2);
    marks +=
        "<circle cx=\"" + num(x) + "\" cy=\"" + num(y1) + "\" r=\"3.5\" fill=\"" + c_tok + "\"/>\n";
    marks += "<circle cx=\"" + num(x) + "\" cy=\"" + num(y2) + "\" r=\"3.5\" fill=\"" + c_tpot +
             "\"/>\n";
  }
  s += std::string(
           "<polyline class=\"series\" data-label=\"output tok/s\" fill=\"none\" stroke=\"") +
       c_tok + "\" stroke-width=\"2\" points=\"" + p_tok + "\"/>\n";
  s += std::string("<polyline class=\"series\" data-label=\"mean TPOT\" fill=\"none\" stroke=\"") +
       c_tpot + "\" stroke-width=\"2\" stroke-dasharray=\"6 3\" points=\"" + p_tpot + "\"/>\n";
  s += marks;
  s += legend_row(b, {{"output tok/s (left axis)", c_tok}, {"mean TPOT ms (right axis)", c_tpot}});
  s += "</g>\n";
  return s;
}

}  // namespace

std::vector<double> nice_ticks(double max_value, int target) {
  if (!(max_value > 0.0) || !std::isfinite(max_value)) max_value = 1.0;
  const double raw = max_value / std::max(target, 1);
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (int i = 0;; ++i) {
    const double t = step * i;
    ticks.push_back(t);
    if (t >= max_value * (1.0 - 1e-12)) break;
  }
  return ticks;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

LatencySamples latency_samples_of(const std::vector<RequestOutcome>& outcomes, std::string label) {
  LatencySamples s;
  s.label = std::move(label);
  for (const RequestOutcome& o : outcomes) {
    if (!o.is_success) continue;
    s.ttft_ms.push_back(o.ttft_s * 1e3);
    s.e2el_ms.push_back(o.e2e_s * 1e3);
    if (o.num_output_tokens > 1) s.tpot_ms.push_back(o.tpot_s() * 1e3);
    for (double g : o.itls_s) s.itl_ms.push_back(g * 1e3);
  }
  return s;
}

std::string render_benchmark_svg(const std::string& title, const std::vector<LatencySamples>& runs,
                                 const std::vector<SweepPoint>& sweep) {
  const double width = 1000, panel_h = 300;
  const double height = 40 + 2 * panel_h + (sweep.empty() ? 0 : 330);
  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" +
       num(height) + "\" viewBox=\"0 0 " + num(width) + " " + num(height) +
       "\" font-family=\"sans-serif\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width) + "\" height=\"" + num(height) +
       "\" fill=\"white\"/>\n";
  s += text(width / 2, 26, title, "middle", 16, " font-weight=\"bold\"");
  std::vector<std::string> labels;
  for (const LatencySamples& r : runs) labels.push_back(r.label);
  struct Spec {
    const char* title;
    const char* x_label;
    std::vector<double> LatencySamples::*field;
  };
  const Spec specs[4] = {{"TTFT CDF", "time to first token (ms)", &LatencySamples::ttft_ms},
                         {"TPOT CDF", "time per output token (ms)", &LatencySamples::tpot_ms},
                         {"ITL CDF", "inter-token latency (ms)", &LatencySamples::itl_ms},
                         {"E2E latency CDF", "end-to-end latency (ms)", &LatencySamples::e2el_ms}};
  for (int k = 0; k < 4; ++k) {
    std::vector<const std::vector<double>*> series;
    for (const LatencySamples& r : runs) series.push_back(&(r.*(specs[k].field)));
    s += cdf_panel((k % 2) * 500.0, 40 + (k / 2) * panel_h, specs[k].title, specs[k].x_label,
                   series, labels);
  }
  if (!sweep.empty()) s += sweep_panel(0, 40 + 2 * panel_h, sweep);
  s += "</svg>\n";
  return s;
}

}  // namespace strata::loadgen
