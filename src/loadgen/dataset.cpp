#include "loadgen/dataset.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

namespace strata::loadgen {
namespace {

void append_random_ids(Xoshiro256* rng, int32_t count, int32_t vocab_size,
                       std::vector<int32_t>* out) {
  for (int32_t i = 0; i < count; ++i) {
    out->push_back(static_cast<int32_t>(uniform_int(rng, kFirstRandomTokenId, vocab_size - 1)));
  }
}

Status check_vocab(int32_t vocab_size) {
  if (vocab_size <= kFirstRandomTokenId + 1) {
    return invalid_argument("loadgen: vocab size " + std::to_string(vocab_size) +
                            " too small for random token ids (set --vocab-size)");
  }
  return Status::ok();
}

}  // namespace

int64_t uniform_int(Xoshiro256* rng, int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(rng->next_u64() % span);
}

int32_t sample_length(Xoshiro256* rng, int32_t len, double range_ratio) {
  const auto lo = static_cast<int64_t>(std::floor(len * (1.0 - range_ratio)));
  const auto hi = static_cast<int64_t>(std::floor(len * (1.0 + range_ratio)));
  return static_cast<int32_t>(std::max<int64_t>(1, uniform_int(rng, lo, hi)));
}

Result<std::vector<BenchRequest>> make_random_dataset(const RandomDatasetOptions& opt) {
  STRATA_RETURN_IF_ERROR(check_vocab(opt.vocab_size));
  if (opt.input_len < 1 || opt.output_len < 1) {
    return invalid_argument("loadgen: --input-len and --output-len must be >= 1");
  }
  if (!(opt.range_ratio >= 0.0 && opt.range_ratio < 1.0)) {
    return invalid_argument("loadgen: --range-ratio must be in [0, 1)");
  }
  Xoshiro256 rng(opt.seed);
  std::vector<BenchRequest> out(static_cast<size_t>(opt.num_prompts));
  for (BenchRequest& r : out) {
    const int32_t in_len = sample_length(&rng, opt.input_len, opt.range_ratio);
    r.num_output_tokens = sample_length(&rng, opt.output_len, opt.range_ratio);
    r.prompt_ids.reserve(static_cast<size_t>(in_len));
    append_random_ids(&rng, in_len, opt.vocab_size, &r.prompt_ids);
    r.num_prompt_tokens = in_len;
  }
  return out;
}

Result<std::vector<BenchRequest>> make_shared_prefix_dataset(const SharedPrefixOptions& opt) {
  STRATA_RETURN_IF_ERROR(check_vocab(opt.vocab_size));
  if (opt.num_groups < 1 || opt.prompts_per_group < 1 || opt.prefix_len < 0 || opt.suffix_len < 0 ||
      opt.prefix_len + opt.suffix_len < 1 || opt.output_len < 1) {
    return invalid_argument(
        "loadgen: shared-prefix needs --sp-num-groups >= 1, --sp-num-prompts-per-group >= 1, "
        "--sp-prefix-len + --sp-suffix-len >= 1 and --output-len >= 1");
  }
  Xoshiro256 rng(opt.seed);
  std::vector<std::vector<int32_t>> prefixes(static_cast<size_t>(opt.num_groups));
  for (auto& p : prefixes) append_random_ids(&rng, opt.prefix_len, opt.vocab_size, &p);
  std::vector<BenchRequest> out;
  out.reserve(static_cast<size_t>(opt.num_groups) * static_cast<size_t>(opt.prompts_per_group));
  for (int32_t k = 0; k < opt.prompts_per_group; ++k) {
    for (int32_t g = 0; g < opt.num_groups; ++g) {
      BenchRequest r;
      r.prompt_ids = prefixes[static_cast<size_t>(g)];
      append_random_ids(&rng, opt.suffix_len, opt.vocab_size, &r.prompt_ids);
      r.num_prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
      r.num_output_tokens = opt.output_len;
      out.push_back(std::move(r));
    }
  }
  return out;
}

Result<std::vector<BenchRequest>> parse_jsonl_dataset(std::string_view text,
                                                      int32_t default_output_len,
                                                      int64_t max_prompts) {
  using nlohmann::json;
  std::vector<BenchRequest> out;
  size_t pos = 0;
  int64_t line_no = 0;
  while (pos < text.size() &&
         (max_prompts <= 0 || static_cast<int64_t>(out.size()) < max_prompts)) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const std::string where = "jsonl line " + std::to_string(line_no) + ": ";
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return invalid_argument(where + "not a JSON object");
    BenchRequest r;
    r.num_output_tokens = default_output_len;
    const auto p = j.find("prompt");
    if (p == j.end()) return invalid_argument(where + "missing \"prompt\"");
    if (p->is_string()) {
      r.prompt_text = p->get<std::string>();
      if (r.prompt_text.empty()) return invalid_argument(where + "empty prompt");
    } else if (p->is_array() && !p->empty()) {
      for (const json& id : *p) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
          return invalid_argument(where + "\"prompt\" array must hold token ids");
        }
        r.prompt_ids.push_back(id.get<int32_t>());
      }
      r.num_prompt_tokens = static_cast<int64_t>(r.prompt_ids.size());
    } else {
      return invalid_argument(where + "\"prompt\" must be a string or a non-empty id array");
    }
    for (const char* key : {"max_tokens", "output_len"}) {
      const auto m = j.find(key);
      if (m == j.end()) continue;
      if (!m->is_number_integer() || m->get<int64_t>() < 1 || m->get<int64_t>() > (1 << 24)) {
        return invalid_argument(where + "\"" + key + "\" must be an integer >= 1");
      }
      r.num_output_tokens = m->get<int32_t>();
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) return invalid_argument("jsonl: no prompts in the dataset");
  return out;
}

Result<std::vector<BenchRequest>> load_jsonl_dataset(const std::string& path,
                                                     int32_t default_output_len,
                                                     int64_t max_prompts) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("jsonl: cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return io_error("jsonl: read error on " + path);
  return parse_jsonl_dataset(ss.str(), default_output_len, max_prompts);
}

}  // namespace strata::loadgen
