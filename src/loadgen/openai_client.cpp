#include "loadgen/openai_client.h"

#include <httplib.h>

#include "loadgen/stream_recorder.h"

namespace strata::loadgen {

using nlohmann::json;

namespace {

double seconds_since(BenchClock::time_point t0) {
  return std::chrono::duration<double>(BenchClock::now() - t0).count();
}

void set_timeout(httplib::Client* c, double connect_s, double read_s) {
  auto split = [](double s, time_t* sec, time_t* usec) {
    *sec = static_cast<time_t>(s);
    *usec = static_cast<time_t>((s - static_cast<double>(*sec)) * 1e6);
  };
  time_t sec = 0, usec = 0;
  split(connect_s, &sec, &usec);
  c->set_connection_timeout(sec, usec);
  split(read_s, &sec, &usec);
  c->set_read_timeout(sec, usec);
  c->set_write_timeout(sec, usec);
}

}  // namespace

Result<std::unique_ptr<OpenAiClient>> OpenAiClient::create(const ClientOptions& opt) {
  const std::string& url = opt.base_url;
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) {
    return invalid_argument("--base-url '" + url + "': expected http://host[:port][/path]");
  }
  const std::string scheme = url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https") {
    return invalid_argument("--base-url '" + url + "': scheme must be http or https");
  }
  const size_t host_begin = scheme_end + 3;
  size_t host_end = url.find('/', host_begin);
  if (host_end == std::string::npos) host_end = url.size();
  if (host_end == host_begin) return invalid_argument("--base-url '" + url + "': no host");
  std::string prefix = url.substr(host_end);
  while (!prefix.empty() && prefix.back() == '/') prefix.pop_back();
  auto http = std::make_unique<httplib::Client>(url.substr(0, host_end));
  if (!http->is_valid()) return invalid_argument("--base-url '" + url + "': not usable");
  http->set_keep_alive(true);
  http->set_tcp_nodelay(true);  // no Nagle delay between the header and body writes
  set_timeout(http.get(), opt.connect_timeout_s, opt.read_timeout_s);
  return std::unique_ptr<OpenAiClient>(
      new OpenAiClient(std::move(http), std::move(prefix), opt.api_key));
}

OpenAiClient::OpenAiClient(std::unique_ptr<httplib::Client> http, std::string path_prefix,
                           std::string api_key)
    : http_(std::move(http)), path_prefix_(std::move(path_prefix)), api_key_(std::move(api_key)) {}

OpenAiClient::~OpenAiClient() = default;

std::string OpenAiClient::path(const std::string& endpoint) const {
  if (!endpoint.empty() && endpoint[0] != '/') return path_prefix_ + "/" + endpoint;
  return path_prefix_ + endpoint;
}

RequestOutcome OpenAiClient::stream(const std::string& endpoint, const json& body,
                                    int64_t dataset_prompt_tokens, bool keep_text,
                                    BenchClock::time_point t0) {
  httplib::Request req;
  req.method = "POST";
  req.path = path(endpoint);
  req.headers.emplace("Content-Type", "application/json");
  req.headers.emplace("Accept", "text/event-stream");
  if (!api_key_.empty()) req.headers.emplace("Authorization", "Bearer " + api_key_);
  req.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  // A keep-alive connection the server has closed since its last response
  // fails at once with a read or write error before any response byte (some
  // servers, e.g. llama-server, close after each stream). Such a request
  // never reached the server's handler: send it once more on a fresh
  // connection, timing from the new send.
  for (int attempt = 0;; ++attempt) {
    StreamRecorder rec(seconds_since(t0), dataset_prompt_tokens, keep_text);
    bool got_status = false, got_bytes = false;
    req.response_handler = [&](const httplib::Response& r) {
      got_status = true;
      rec.on_status(r.status);
      return true;
    };
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      got_bytes = true;
      return rec.on_bytes(std::string_view(data, n), seconds_since(t0));
    };
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    const bool is_sent = http_->send(req, res, err);
    const double end_s = seconds_since(t0);
    const bool is_stale_connection =
        !is_sent && !got_status && (err == httplib::Error::Read || err == httplib::Error::Write);
    if (is_stale_connection && attempt == 0) continue;
    if (!got_bytes && !res.body.empty()) (void)rec.on_bytes(res.body, end_s);
    std::string transport_error;
    if (!is_sent && err != httplib::Error::Canceled) {
      transport_error = "HTTP client: " + httplib::to_string(err);
    }
    return rec.finish(end_s, transport_error);
  }
}

Result<json> OpenAiClient::get_models() {
  httplib::Headers headers;
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  auto res = http_->Get(path("/v1/models"), headers);
  if (!res) return io_error("GET /v1/models: " + httplib::to_string(res.error()));
  if (res->status != 200) {
    return io_error("GET /v1/models: HTTP " + std::to_string(res->status) + ": " +
                    res->body.substr(0, 200));
  }
  json j = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return io_error("GET /v1/models: the body is not JSON");
  return j;
}

Result<bool> OpenAiClient::accepts_token_id(const std::string& endpoint, const std::string& model,
                                            int32_t token_id) {
  json body{{"prompt", json::array({token_id})}, {"max_tokens", 1}, {"temperature", 0}};
  if (!model.empty()) body["model"] = model;
  httplib::Headers headers;
  if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
  auto res = http_->Post(path(endpoint), headers, body.dump(), "application/json");
  if (!res) return io_error("POST " + endpoint + ": " + httplib::to_string(res.error()));
  if (res->status == 401 || res->status == 403 || res->status == 404) {
    return io_error("POST " + endpoint + ": HTTP " + std::to_string(res->status) +
                    " while probing the vocabulary size (check --api-key / --endpoint, or set "
                    "--vocab-size)");
  }
  return res->status == 200;
}

Result<std::string> first_model_id(const json& models) {
  if (models.is_object()) {
    auto d = models.find("data");
    if (d != models.end() && d->is_array() && !d->empty() && d->front().is_object()) {
      auto id = d->front().find("id");
      if (id != d->front().end() && id->is_string()) return id->get<std::string>();
    }
  }
  return invalid_argument("GET /v1/models lists no model id; pass --model");
}

int32_t advertised_vocab_size(const json& models) {
  if (!models.is_object()) return 0;
  auto d = models.find("data");
  if (d == models.end() || !d->is_array() || d->empty() || !d->front().is_object()) return 0;
  const json& card = d->front();
  auto read = [](const json& obj, const char* key) -> int32_t {
    auto v = obj.find(key);
    if (v == obj.end() || !v->is_number_integer()) return 0;
    const auto n = v->get<int64_t>();
    return n > 0 && n < (int64_t{1} << 31) ? static_cast<int32_t>(n) : 0;
  };
  if (auto m = card.find("meta"); m != card.end() && m->is_object()) {
    if (int32_t n = read(*m, "n_vocab")) return n;
  }
  return read(card, "vocab_size");
}

Result<int32_t> probe_vocab_size(OpenAiClient* client, const std::string& model) {
  const std::string endpoint = "/v1/completions";
  STRATA_ASSIGN_OR_RETURN(bool ok0, client->accepts_token_id(endpoint, model, 0));
  if (!ok0) {
    return invalid_argument(
        "the server refuses a token-id prompt [0]; pass --vocab-size or use --dataset-name jsonl "
        "with text prompts");
  }
  int64_t good = 0, bad = 256;
  for (;;) {
    if (bad > (int64_t{1} << 24))
      return invalid_argument("vocab probe did not end; pass --vocab-size");
    STRATA_ASSIGN_OR_RETURN(bool ok,
                            client->accepts_token_id(endpoint, model, static_cast<int32_t>(bad)));
    if (!ok) break;
    good = bad;
    bad *= 2;
  }
  while (bad - good > 1) {
    const int64_t mid = good + (bad - good) / 2;
    STRATA_ASSIGN_OR_RETURN(bool ok,
                            client->accepts_token_id(endpoint, model, static_cast<int32_t>(mid)));
    (ok ? good : bad) = mid;
  }
  return static_cast<int32_t>(bad);
}

}  // namespace strata::loadgen
