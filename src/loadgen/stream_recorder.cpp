#include "loadgen/stream_recorder.h"

#include <nlohmann/json.hpp>

namespace strata::loadgen {

using nlohmann::json;

namespace {

// The message of an OpenAI error body ({"error": {"message": ...}} or
// {"error": "..."}), else the raw text cut to a line.
std::string error_message_of(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto e = j.find("error");
    if (e != j.end()) {
      if (e->is_string()) return e->get<std::string>();
      if (e->is_object()) {
        auto m = e->find("message");
        if (m != e->end() && m->is_string()) return m->get<std::string>();
      }
      return e->dump();
    }
  }
  std::string s = body.substr(0, 200);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

StreamRecorder::StreamRecorder(double start_s, int64_t dataset_prompt_tokens, bool keep_text)
    : keep_text_(keep_text) {
  out_.start_s = start_s;
  out_.num_prompt_tokens = dataset_prompt_tokens;
}

void StreamRecorder::fail(std::string message) {
  if (has_failed_) return;
  has_failed_ = true;
  out_.error = std::move(message);
}

bool StreamRecorder::on_bytes(std::string_view bytes, double now_s) {
  if (http_status_ != 200) {
    if (error_body_.size() < 64 * 1024) error_body_.append(bytes);
    return true;
  }
  if (has_failed_) return false;
  for (const std::string& data : parser_.feed(bytes)) {
    on_event(data, now_s);
    if (has_failed_) return false;
  }
  return true;
}

void StreamRecorder::on_event(const std::string& data, double now_s) {
  if (SseParser::is_done_marker(data)) {
    saw_done_ = true;
    return;
  }
  json j = json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    fail("stream event is not a JSON object: " + data.substr(0, 120));
    return;
  }
  if (auto e = j.find("error"); e != j.end() && !e->is_null()) {
    fail("error in stream: " + error_message_of(data));
    return;
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto p = u->find("prompt_tokens");
    auto c = u->find("completion_tokens");
    if (p != u->end() && p->is_number_integer()) out_.num_prompt_tokens = p->get<int64_t>();
    if (c != u->end() && c->is_number_integer()) {
      out_.num_output_tokens = c->get<int64_t>();
      out_.has_usage = true;
    }
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) return;
  const json& choice = choices->front();
  if (!choice.is_object()) return;
  if (first_choice_s_ < 0.0) first_choice_s_ = now_s;
  const json* text = nullptr;
  if (auto t = choice.find("text"); t != choice.end()) {
    text = &*t;
  } else if (auto d = choice.find("delta"); d != choice.end() && d->is_object()) {
    if (auto c = d->find("content"); c != d->end()) text = &*c;
  }
  if (text == nullptr || !text->is_string() || text->get_ref<const std::string&>().empty()) return;
  const double since_start = now_s - out_.start_s;
  if (out_.num_content_chunks == 0) {
    out_.ttft_s = since_start;
  } else {
    out_.itls_s.push_back(now_s - last_chunk_s_);
  }
  last_chunk_s_ = now_s;
  ++out_.num_content_chunks;
  if (keep_text_) out_.generated_text += text->get_ref<const std::string&>();
}

RequestOutcome StreamRecorder::finish(double now_s, const std::string& transport_error) {
  out_.e2e_s = now_s - out_.start_s;
  if (http_status_ == 200 && !has_failed_) {
    const std::string tail = parser_.finish();
    if (!tail.empty()) on_event(tail, now_s);
  }
  if (!transport_error.empty() && !has_failed_) {
    fail(transport_error);
  } else if (http_status_ != 200 && !has_failed_) {
    fail("HTTP " + std::to_string(http_status_) + ": " + error_message_of(error_body_));
  } else if (!has_failed_ && !saw_done_) {
    fail("stream ended before data: [DONE]");
  }
  if (!out_.has_usage) out_.num_output_tokens = out_.num_content_chunks;
  if (!has_failed_ && out_.num_content_chunks == 0) {
    if (out_.num_output_tokens > 0 && first_choice_s_ >= 0.0) {
      // Tokens were generated but none showed text (a server holds back
      // bytes that are not valid UTF-8 yet): the first choice chunk stands
      // for the first token.
      out_.ttft_s = first_choice_s_ - out_.start_s;
    } else {
      fail("stream carried no output token");
    }
  }
  if (!has_failed_ && out_.num_output_tokens > out_.num_content_chunks) {
    out_.itls_s = spread_itls(out_.itls_s, out_.num_output_tokens - 1);
  }
  out_.is_success = !has_failed_;
  return std::move(out_);
}

std::vector<double> spread_itls(const std::vector<double>& gaps_s, int64_t num_samples) {
  if (gaps_s.empty() || num_samples <= static_cast<int64_t>(gaps_s.size())) return gaps_s;
  const auto num_gaps = static_cast<int64_t>(gaps_s.size());
  const int64_t base = num_samples / num_gaps;
  const int64_t extra = num_samples % num_gaps;
  std::vector<double> out;
  out.reserve(static_cast<size_t>(num_samples));
  for (int64_t i = 0; i < num_gaps; ++i) {
    const int64_t parts = base + (i < extra ? 1 : 0);
    for (int64_t k = 0; k < parts; ++k) {
      out.push_back(gaps_s[static_cast<size_t>(i)] / static_cast<double>(parts));
    }
  }
  return out;
}

}  // namespace strata::loadgen
