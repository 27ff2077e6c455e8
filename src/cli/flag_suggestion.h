// Suggestions for mistyped flags and subcommands, as git and cargo make them:
// an argument CLI11 could not place is answered with the closest name the
// command knows ("did you mean --kv-cache-memory?"), or with a pointer to
// --help when nothing is close.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
}

namespace strata::cli {

// The name in `names` closest to `given` by edit distance (insertions,
// deletions, substitutions and swaps of neighbours), or a name that starts
// with `given`; empty when none is within a third of `given`'s length (at
// least 2 edits). Ties go to the earlier name.
std::string closest_name(std::string_view given, const std::vector<std::string>& names);

// After a parse of `app` failed: one line naming the first argument no
// command took, with the closest flag or subcommand of the deepest
// subcommand given; empty when every argument was taken (the error is about
// something else: a missing or invalid value).
std::string unknown_argument_message(const CLI::App& app);

}  // namespace strata::cli
