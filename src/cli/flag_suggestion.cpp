#include "cli/flag_suggestion.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>

namespace strata::cli {
namespace {

// Optimal string alignment distance (Levenshtein plus swaps of neighbours,
// the commonest typo).
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

// "strata serve": the command path of `app`.
std::string command_path(const CLI::App* app) {
  std::string path;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    const std::string name = a->get_parent() == nullptr ? "strata" : a->get_name();
    path = path.empty() ? name : name + " " + path;
  }
  return path;
}

}  // namespace

std::string closest_name(std::string_view given, const std::vector<std::string>& names) {
  const size_t max_distance = std::max<size_t>(2, given.size() / 3);
  std::string best;
  size_t best_distance = max_distance + 1;
  for (const std::string& name : names) {
    size_t distance = edit_distance(given, name);
    // A prefix of a longer name ("--kv-cache-mem") is as good as one edit.
    if (name.size() > given.size() && given.size() >= 4 &&
        name.compare(0, given.size(), given) == 0) {
      distance = std::min<size_t>(distance, 1);
    }
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  return best;
}

std::string unknown_argument_message(const CLI::App& app) {
  const CLI::App* command = &app;
  while (!command->get_subcommands().empty()) command = command->get_subcommands().front();
  const std::vector<std::string> rest = app.remaining(/*recurse=*/true);
  if (rest.empty()) return "";
  std::string arg = rest.front();
  const std::string path = command_path(command);
  std::vector<std::string> names;
  std::string what;
  if (arg.size() > 1 && arg[0] == '-') {
    arg = arg.substr(0, arg.find('='));  // --flag=value
    what = "unknown flag";
    for (const CLI::Option* opt : command->get_options()) {
      for (const std::string& n : opt->get_lnames()) names.push_back("--" + n);
      for (const std::string& n : opt->get_snames()) names.push_back("-" + n);
    }
  } else {
    const std::vector<const CLI::App*> subs =
        command->get_subcommands(std::function<bool(const CLI::App*)>{});
    what = subs.empty() ? "unexpected argument" : "unknown command";
    for (const CLI::App* sub : subs) names.push_back(sub->get_name());
  }
  std::string message = path + ": " + what + " '" + arg + "'";
  const std::string suggestion = closest_name(arg, names);
  if (!suggestion.empty()) message += "; did you mean " + suggestion + "?";
  message += " (" + path + " --help lists them)";
  return message;
}

}  // namespace strata::cli
