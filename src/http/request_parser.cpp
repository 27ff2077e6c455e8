#include "http/request_parser.h"

#include <cassert>

#include "http/http_chars.h"

namespace strata::http {
namespace {

constexpr size_t kMaxMethodBytes = 32;
constexpr size_t kMaxContentLengthDigits = 19;  // < 2^63

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with_icase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

}  // namespace

bool is_token_char(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

RequestHeadParser::State RequestHeadParser::fail(int status, std::string_view message) {
  error_ = HttpError{status, message};
  state_ = State::kError;
  return state_;
}

RequestHeadParser::State RequestHeadParser::feed(std::string_view data, HttpRequest* request) {
  if (state_ != State::kNeedMore) return state_;
  assert(data.size() >= scanned_ && "feed() must see every byte it saw before");
  for (size_t i = scanned_; i < data.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == '\n') {
      if (i == 0 || data[i - 1] != '\r') return fail(400, "bare LF in request head");
      const size_t line_end = i - 1;  // the CR
      if (line_end == line_start_) {
        if (!has_started_) {
          // An empty line before the request line: skipped.
          head_start_ = line_start_ = i + 1;
          continue;
        }
        if (i + 1 > limits_.max_header_bytes) {
          return fail(431, "request header block too large");
        }
        scanned_ = i + 1;
        head_bytes_ = i + 1;
        return parse_head(data.substr(head_start_, i + 1 - head_start_), request);
      }
      ++num_lines_;
      // The request line plus max_headers field lines.
      if (num_lines_ > limits_.max_headers + 1) return fail(431, "too many header fields");
      line_start_ = i + 1;
      continue;
    }
    if (i > 0 && data[i - 1] == '\r') return fail(400, "bare CR in request head");
    if (c == '\r') continue;
    if (is_control(c)) return fail(400, "control character in request head");
    has_started_ = true;
  }
  scanned_ = data.size();
  // Leading empty lines count: they are buffered too.
  if (scanned_ > limits_.max_header_bytes) return fail(431, "request header block too large");
  return State::kNeedMore;
}

RequestHeadParser::State RequestHeadParser::parse_head(std::string_view head,
                                                       HttpRequest* request) {
  // `head` ends with CRLF CRLF; every line in it ends with CRLF.
  size_t pos = head.find("\r\n");
  assert(pos != std::string_view::npos);
  if (State s = parse_request_line(head.substr(0, pos), request); s == State::kError) return s;
  pos += 2;
  while (pos + 2 < head.size()) {
    const size_t end = head.find("\r\n", pos);
    assert(end != std::string_view::npos);
    if (State s = parse_field(head.substr(pos, end - pos), request); s == State::kError) return s;
    pos = end + 2;
  }
  if (request->version_minor == 1 && num_host_ != 1) {
    return fail(400, num_host_ == 0 ? "HTTP/1.1 request without Host" : "duplicate Host");
  }
  request->keep_alive =
      !has_connection_close_ && (request->version_minor == 1 || has_connection_keep_alive_);
  state_ = State::kDone;
  return state_;
}

RequestHeadParser::State RequestHeadParser::parse_request_line(std::string_view line,
                                                               HttpRequest* request) {
  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return fail(400, "malformed request line");
  const std::string_view method = line.substr(0, sp1);
  if (method.size() > kMaxMethodBytes) return fail(400, "malformed request line");
  for (char c : method) {
    if (!is_token_char(static_cast<unsigned char>(c))) return fail(400, "malformed request line");
  }
  const size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1) return fail(400, "malformed request line");
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  for (char c : target) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u >= 0x7f) return fail(400, "malformed request target");
  }
  const std::string_view version = line.substr(sp2 + 1);
  if (version == "HTTP/1.1") {
    request->version_minor = 1;
  } else if (version == "HTTP/1.0") {
    request->version_minor = 0;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[5] >= '0' &&
             version[5] <= '9' && version[6] == '.' && version[7] >= '0' && version[7] <= '9') {
    return fail(505, "HTTP version not supported");
  } else {
    return fail(400, "malformed request line");
  }
  request->method.assign(method);
  request->target.assign(target);
  return parse_target(request);
}

RequestHeadParser::State RequestHeadParser::parse_target(HttpRequest* request) {
  std::string_view t = request->target;
  if (t.find('#') != std::string_view::npos) return fail(400, "malformed request target");
  if (t.front() != '/') {
    // Absolute-form (RFC 9112 3.2.2): tolerated, the authority is dropped.
    size_t scheme_len = 0;
    if (starts_with_icase(t, "http://")) {
      scheme_len = 7;
    } else if (starts_with_icase(t, "https://")) {
      scheme_len = 8;
    } else {
      return fail(400, "malformed request target");
    }
    t.remove_prefix(scheme_len);
    const size_t authority_end = t.find_first_of("/?");
    if (authority_end == 0) return fail(400, "malformed request target");
    t = authority_end == std::string_view::npos ? std::string_view() : t.substr(authority_end);
  }
  const size_t q = t.find('?');
  const std::string_view path = t.substr(0, q);
  request->path = path.empty() ? std::string("/") : std::string(path);
  request->query = q == std::string_view::npos ? std::string() : std::string(t.substr(q + 1));
  return State::kNeedMore;
}

RequestHeadParser::State RequestHeadParser::parse_field(std::string_view line,
                                                        HttpRequest* request) {
  if (line.front() == ' ' || line.front() == '\t') return fail(400, "obsolete line folding");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos || colon == 0) return fail(400, "malformed header field");
  const std::string_view name = line.substr(0, colon);
  for (char c : name) {
    if (!is_token_char(static_cast<unsigned char>(c))) return fail(400, "malformed header field");
  }
  const std::string_view value = trim_ows(line.substr(colon + 1));

  if (iequals(name, "Content-Length")) {
    if (head_.framing == BodyFraming::kLength) return fail(400, "duplicate Content-Length");
    if (has_transfer_encoding_) {
      return fail(400, "Content-Length together with Transfer-Encoding");
    }
    if (value.empty()) return fail(400, "invalid Content-Length");
    if (value.size() > kMaxContentLengthDigits) return fail(400, "invalid Content-Length");
    uint64_t n = 0;
    for (char c : value) {
      if (c < '0' || c > '9') return fail(400, "invalid Content-Length");
      n = n * 10 + static_cast<uint64_t>(c - '0');
    }
    head_.framing = BodyFraming::kLength;
    head_.content_length = n;
  } else if (iequals(name, "Transfer-Encoding")) {
    if (has_transfer_encoding_) return fail(400, "duplicate Transfer-Encoding");
    if (head_.framing == BodyFraming::kLength) {
      return fail(400, "Content-Length together with Transfer-Encoding");
    }
    if (request->version_minor == 0) return fail(400, "Transfer-Encoding in an HTTP/1.0 request");
    if (!iequals(value, "chunked")) return fail(400, "unsupported Transfer-Encoding");
    has_transfer_encoding_ = true;
    head_.framing = BodyFraming::kChunked;
  } else if (iequals(name, "Host")) {
    ++num_host_;
  } else if (iequals(name, "Connection")) {
    // A comma-separated token list.
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t comma = rest.find(',');
      const std::string_view token = trim_ows(rest.substr(0, comma));
      if (iequals(token, "close")) {
        has_connection_close_ = true;
      } else if (iequals(token, "keep-alive")) {
        has_connection_keep_alive_ = true;
      }
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  } else if (iequals(name, "Expect")) {
    if (!iequals(value, "100-continue")) return fail(417, "unsupported Expect");
    head_.expects_continue = request->version_minor == 1;
  }
  request->headers.push_back(Header{std::string(name), std::string(value)});
  return State::kNeedMore;
}

}  // namespace strata::http
