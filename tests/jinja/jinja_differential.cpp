// The C++ half of the differential test against Python Jinja2
// (tests/jinja/jinja_reference.py writes the cases and Jinja2's renderings):
// renders every case with ChatTemplateRenderer and compares byte for byte.
// Where Jinja2 raised through raise_exception, strata must return kRaised
// with the same message; where Jinja2 failed otherwise, strata must fail
// (any other kind). Prints per-template counts and the first mismatches.
//
//   jinja_differential CASES.json [--only SUBSTRING] [--show N] [--report FILE]
//
// Exit status 0 only when every case agrees.
#include <cstdio>
#include <ctime>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "jinja/chat_template_renderer.h"

namespace {

using json = nlohmann::ordered_json;
using strata::jinja::ChatRenderParams;
using strata::jinja::ChatTemplateOptions;
using strata::jinja::ChatTemplateRenderer;
using strata::jinja::ErrorKind;

// tests/jinja/jinja_reference.py's FIXED_NOW: 2026-01-15 10:30:45.
std::tm fixed_now() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 10;
  tm.tm_min = 30;
  tm.tm_sec = 45;
  tm.tm_wday = 4;  // Thursday
  tm.tm_yday = 14;
  tm.tm_isdst = 0;
  return tm;
}

std::string first_difference(const std::string& want, const std::string& got) {
  size_t i = 0;
  while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
  const size_t from = i > 60 ? i - 60 : 0;
  std::ostringstream out;
  out << "first difference at byte " << i << "\n    want: " << json(want.substr(from, 160)).dump()
      << "\n    got:  " << json(got.substr(from, 160)).dump();
  return out.str();
}

struct Counts {
  int cases = 0;
  int rendered = 0;  // Jinja2 rendered
  int rendered_ok = 0;
  int raised = 0;  // Jinja2 raise_exception
  int raised_ok = 0;
  int errors = 0;  // Jinja2 failed otherwise
  int errors_ok = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: jinja_differential CASES.json [--only S] [--show N] [--report FILE]\n";
    return 2;
  }
  std::string only;
  int show = 10;
  std::string report_path;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--only") only = argv[i + 1];
    if (flag == "--show") show = std::stoi(argv[i + 1]);
    if (flag == "--report") report_path = argv[i + 1];
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    std::cerr << "jinja_differential: cannot open " << argv[1] << "\n";
    return 2;
  }
  const json data = json::parse(in);
  std::map<std::string, ChatTemplateRenderer> renderers;
  std::map<std::string, std::string> parse_errors;
  for (const auto& [name, source] : data["templates"].items()) {
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    ChatTemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    options.render.now = fixed_now;
    auto r = ChatTemplateRenderer::create(source.get<std::string>(), options);
    if (r.is_ok()) {
      renderers.emplace(name, std::move(r).value());
    } else {
      parse_errors.emplace(name, r.error().to_string());
    }
  }
  std::map<std::string, Counts> per_template;
  Counts total;
  int shown = 0;
  std::ostringstream report;
  for (const json& c : data["cases"]) {
    const std::string name = c["template"].get<std::string>();
    if (!only.empty() && name.find(only) == std::string::npos) continue;
    Counts& counts = per_template[name];
    const std::string id = name + " " + c["id"].get<std::string>();
    std::string verdict;  // empty: agrees
    strata::jinja::Expected<std::string> result = std::string();
    auto it = renderers.find(name);
    if (it == renderers.end()) {
      result = strata::jinja::TemplateError(ErrorKind::kSyntax, parse_errors[name]);
    } else {
      ChatRenderParams params;
      params.tools = &c["tools"];
      params.documents = &c["documents"];
      params.add_generation_prompt = c["add_generation_prompt"].get<bool>();
      params.continue_final_message = c["continue_final_message"].get<bool>();
      params.chat_template_kwargs = &c["chat_template_kwargs"];
      result = it->second.render(c["messages"], params);
    }
    const json& kind = c["error_kind"];
    ++counts.cases;
    if (kind.is_null()) {
      ++counts.rendered;
      const std::string want = c["expected"].get<std::string>();
      if (!result.is_ok()) {
        verdict = "Jinja2 rendered, strata failed: " + result.error().to_string();
      } else if (result.value() != want) {
        verdict = "output differs, " + first_difference(want, result.value());
      } else {
        ++counts.rendered_ok;
      }
    } else if (kind == "raised") {
      ++counts.raised;
      const std::string want = c["error"].get<std::string>();
      if (result.is_ok()) {
        verdict = "Jinja2 raised " + json(want).dump() + ", strata rendered";
      } else if (result.error().kind() != ErrorKind::kRaised || result.error().message() != want) {
        verdict = "Jinja2 raised " + json(want).dump() + ", strata: " + result.error().to_string();
      } else {
        ++counts.raised_ok;
      }
    } else {
      ++counts.errors;
      if (result.is_ok()) {
        verdict = "Jinja2 failed (" + c["error"].get<std::string>() + "), strata rendered";
      } else if (result.error().kind() == ErrorKind::kRaised) {
        verdict = "Jinja2 failed (" + c["error"].get<std::string>() +
                  "), strata raised: " + result.error().message();
      } else {
        ++counts.errors_ok;
      }
    }
    if (!verdict.empty()) {
      report << id << ": " << verdict << "\n";
      if (shown++ < show) std::cout << "MISMATCH " << id << ": " << verdict << "\n";
    }
  }
  std::printf("%-48s %6s %9s %9s %9s\n", "template", "cases", "rendered", "raised", "errors");
  for (const auto& [name, k] : per_template) {
    std::printf("%-48s %6d %4d/%-4d %4d/%-4d %4d/%-4d%s\n", name.c_str(), k.cases, k.rendered_ok,
                k.rendered, k.raised_ok, k.raised, k.errors_ok, k.errors,
                (k.rendered_ok == k.rendered && k.raised_ok == k.raised && k.errors_ok == k.errors)
                    ? ""
                    : "  <-- MISMATCH");
    total.cases += k.cases;
    total.rendered += k.rendered;
    total.rendered_ok += k.rendered_ok;
    total.raised += k.raised;
    total.raised_ok += k.raised_ok;
    total.errors += k.errors;
    total.errors_ok += k.errors_ok;
  }
  const int agree = total.rendered_ok + total.raised_ok + total.errors_ok;
  std::printf(
      "jinja_differential: %zu templates, %d cases; agree %d/%d (%.2f%%): rendered byte-identical "
      "%d/%d, raise_exception same message %d/%d, other errors %d/%d\n",
      per_template.size(), total.cases, agree, total.cases,
      total.cases ? 100.0 * agree / total.cases : 0.0, total.rendered_ok, total.rendered,
      total.raised_ok, total.raised, total.errors_ok, total.errors);
  if (!report_path.empty()) {
    std::ofstream(report_path) << report.str();
  }
  return agree == total.cases && total.cases > 0 ? 0 : 1;
}
