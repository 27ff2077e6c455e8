// The SVG plot is well-formed XML (balanced tags, escaped text) and holds
// one polyline per series with its label, plus the sweep chart when given.
#include "loadgen/svg_plot.h"

#include <gtest/gtest.h>

#include <vector>

namespace strata::loadgen {
namespace {

// A tiny XML well-formedness check: every tag closes in order, attribute
// values are quoted, and text holds no raw '<' or stray '&'. Returns "" when
// fine, else what is wrong.
std::string xml_problem(const std::string& s) {
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t semi = s.find(';', i);
      const std::string ent = semi == std::string::npos ? "" : s.substr(i, semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;") {
        return "stray & at " + std::to_string(i);
      }
      i = semi + 1;
      continue;
    }
    if (s[i] != '<') {
      ++i;
      continue;
    }
    if (s.compare(i, 2, "<?") == 0) {
      const size_t e = s.find("?>", i);
      if (e == std::string::npos) return "unclosed <?";
      i = e + 2;
      continue;
    }
    // Find the tag end, skipping quoted attribute values.
    size_t j = i + 1;
    bool in_quote = false;
    while (j < s.size() && (in_quote || s[j] != '>')) {
      if (s[j] == '"') in_quote = !in_quote;
      if (!in_quote && s[j] == '<') return "'<' inside a tag at " + std::to_string(j);
      ++j;
    }
    if (j >= s.size()) return "unclosed tag at " + std::to_string(i);
    std::string tag = s.substr(i + 1, j - i - 1);
    i = j + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
      continue;
    }
    const bool self_closing = tag.back() == '/';
    const std::string name = tag.substr(0, tag.find_first_of(" \t\n/"));
    if (!self_closing) stack.push_back(name);
    if (stack.empty() && !self_closing) return "no root";
  }
  if (!stack.empty()) return "unclosed <" + stack.back() + ">";
  return "";
}

size_t count(const std::string& s, const std::string& sub) {
  size_t n = 0;
  for (size_t p = s.find(sub); p != std::string::npos; p = s.find(sub, p + 1)) ++n;
  return n;
}

TEST(XmlCheck, CatchesBrokenDocuments) {
  EXPECT_EQ(xml_problem("<svg><g></g><line x=\"1\"/></svg>"), "");
  EXPECT_NE(xml_problem("<svg><g></svg></g>"), "");
  EXPECT_NE(xml_problem("<svg><g></g>"), "");
  EXPECT_NE(xml_problem("<svg><text>a < b</text></svg>"), "");
  EXPECT_NE(xml_problem("<svg><text>a & b</text></svg>"), "");
}

TEST(SvgPlot, CdfsAreWellFormedWithOneSeriesPerRun) {
  LatencySamples a{"run <a> & \"b\"", {1, 2, 3}, {0.5, 0.7}, {0.1, 0.2, 0.3, 0.4}, {10, 20}};
  LatencySamples b{"c=2", {4, 5}, {}, {0.2}, {30}};
  const std::string svg = render_benchmark_svg("title & more", {a, b}, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  // 4 panels x 2 runs, minus b's empty TPOT series.
  EXPECT_EQ(count(svg, "<polyline class=\"series\""), 7u);
  EXPECT_EQ(count(svg, "data-label=\"run &lt;a&gt; &amp; &quot;b&quot;\""), 4u);
  EXPECT_EQ(count(svg, "data-label=\"c=2\""), 3u);
  for (const char* t : {"TTFT CDF", "TPOT CDF", "ITL CDF", "E2E latency CDF", "title &amp; more"}) {
    EXPECT_NE(svg.find(t), std::string::npos) << t;
  }
  EXPECT_EQ(svg.find("vs concurrency"), std::string::npos);
}

TEST(SvgPlot, SweepChartHasThroughputAndTpotSeries) {
  std::vector<LatencySamples> runs;
  std::vector<SweepPoint> sweep;
  for (int c : {1, 2, 4}) {
    runs.push_back({"concurrency " + std::to_string(c), {1.0 * c}, {2.0}, {3.0}, {4.0 * c}});
    sweep.push_back({c, 10.0 * c, 5.0 + c});
  }
  const std::string svg = render_benchmark_svg("sweep", runs, sweep);
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_NE(svg.find("vs concurrency"), std::string::npos);
  EXPECT_NE(svg.find("data-label=\"output tok/s\""), std::string::npos);
  EXPECT_NE(svg.find("data-label=\"mean TPOT\""), std::string::npos);
  EXPECT_EQ(count(svg, "<polyline class=\"series\""), 3u * 4u + 2u);
  EXPECT_EQ(count(svg, "<circle"), 6u);
}

TEST(SvgPlot, ManySamplesAreDownsampled) {
  LatencySamples big{"big", {}, {}, {}, {}};
  for (int i = 0; i < 100000; ++i) big.itl_ms.push_back(i % 997);
  const std::string svg = render_benchmark_svg("t", {big}, {});
  EXPECT_EQ(xml_problem(svg), "");
  EXPECT_LT(svg.size(), 200000u);
}

TEST(NiceTicks, StepsOfOneTwoFive) {
  EXPECT_EQ(nice_ticks(10.0, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(7.3, 5), (std::vector<double>{0, 2, 4, 6, 8}));
  EXPECT_EQ(nice_ticks(0.0, 5), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0}));
  EXPECT_EQ(nice_ticks(230.0, 5).back(), 250.0);
}

}  // namespace
}  // namespace strata::loadgen
