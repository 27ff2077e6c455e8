#include "loadgen/request_body.h"

namespace strata::loadgen {

using nlohmann::json;

namespace {

void add_common(json* body, int32_t max_tokens, const BodyOptions& opt) {
  json& b = *body;
  if (!opt.model.empty()) b["model"] = opt.model;
  b["max_tokens"] = max_tokens;
  b["temperature"] = opt.temperature;
  b["ignore_eos"] = opt.ignore_eos;
  b["stream"] = true;
  b["stream_options"] = json{{"include_usage", true}};
  if (opt.extra_body.is_object()) {
    for (auto it = opt.extra_body.begin(); it != opt.extra_body.end(); ++it) b[it.key()] = *it;
  }
}

}  // namespace

json make_completion_body(const BenchRequest& req, const BodyOptions& opt) {
  json b = json::object();
  if (!req.prompt_ids.empty()) {
    b["prompt"] = req.prompt_ids;
  } else {
    b["prompt"] = req.prompt_text;
  }
  add_common(&b, req.num_output_tokens, opt);
  return b;
}

json make_chat_body(const std::vector<ChatTurn>& history, int32_t max_tokens,
                    const BodyOptions& opt) {
  json msgs = json::array();
  for (const ChatTurn& t : history) msgs.push_back(json{{"role", t.role}, {"content", t.content}});
  json b = json::object();
  b["messages"] = std::move(msgs);
  add_common(&b, max_tokens, opt);
  return b;
}

bool is_chat_endpoint(const std::string& endpoint) {
  const std::string suffix = "chat/completions";
  return endpoint.size() >= suffix.size() &&
         endpoint.compare(endpoint.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace strata::loadgen
