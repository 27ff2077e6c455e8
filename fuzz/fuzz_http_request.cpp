// libFuzzer target: RequestHeadParser and ChunkedDecoder on arbitrary bytes,
// the way a connection feeds them. The first input byte picks a split
// point; the rest is the stream. Checked on every input:
//   - feeding it whole and in two pieces gives the same outcome (the
//     incremental scan must not depend on how bytes arrive);
//   - an accepted head is well formed: a token method, a path starting
//     with '/', header names of token characters, values free of control
//     bytes, a head within the byte limit;
//   - a chunked body decodes to the same bytes whole and byte by byte,
//     never past its limit.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/chunked_decoder.h"
#include "http/request_parser.h"

namespace {

using strata::http::BodyFraming;
using strata::http::ChunkedDecoder;
using strata::http::HttpRequest;
using strata::http::RequestHeadParser;

constexpr size_t kMaxHeaderBytes = 4096;
constexpr uint64_t kMaxBody = 8192;

void check_request(const HttpRequest& r, size_t head_bytes, size_t size) {
  if (head_bytes == 0 || head_bytes > size || head_bytes > kMaxHeaderBytes) __builtin_trap();
  if (r.method.empty() || r.path.empty() || r.path.front() != '/') __builtin_trap();
  for (char c : r.method) {
    if (!strata::http::is_token_char(static_cast<unsigned char>(c))) __builtin_trap();
  }
  for (const strata::http::Header& h : r.headers) {
    if (h.name.empty()) __builtin_trap();
    for (char c : h.name) {
      if (!strata::http::is_token_char(static_cast<unsigned char>(c))) __builtin_trap();
    }
    for (char c : h.value) {
      const unsigned char u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) __builtin_trap();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const size_t split = data[0];
  const std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  strata::http::ParserLimits limits;
  limits.max_header_bytes = kMaxHeaderBytes;
  limits.max_headers = 32;

  RequestHeadParser whole(limits);
  HttpRequest r1;
  const RequestHeadParser::State s1 = whole.feed(in, &r1);

  RequestHeadParser pieces(limits);
  HttpRequest r2;
  RequestHeadParser::State s2 = pieces.feed(in.substr(0, std::min(split, in.size())), &r2);
  if (s2 == RequestHeadParser::State::kNeedMore) s2 = pieces.feed(in, &r2);
  if (s1 != s2) __builtin_trap();
  if (s1 == RequestHeadParser::State::kError && whole.error().status != pieces.error().status) {
    __builtin_trap();
  }
  if (s1 != RequestHeadParser::State::kDone) return 0;
  if (whole.head_bytes() != pieces.head_bytes() || r1.target != r2.target) __builtin_trap();
  check_request(r1, whole.head_bytes(), in.size());

  if (whole.head().framing != BodyFraming::kChunked) return 0;
  const std::string_view body = in.substr(whole.head_bytes());
  ChunkedDecoder all(kMaxBody, 512);
  std::string out1;
  size_t used1 = 0;
  const ChunkedDecoder::State c1 = all.feed(body, &used1, &out1);
  ChunkedDecoder bytewise(kMaxBody, 512);
  std::string out2;
  size_t used2 = 0;
  ChunkedDecoder::State c2 = ChunkedDecoder::State::kNeedMore;
  for (size_t i = 0; i < body.size() && c2 == ChunkedDecoder::State::kNeedMore; ++i) {
    size_t used = 0;
    c2 = bytewise.feed(body.substr(i, 1), &used, &out2);
    used2 += used;
  }
  if (c1 != c2 || out1 != out2 || out1.size() > kMaxBody) __builtin_trap();
  if (c1 == ChunkedDecoder::State::kDone && used1 != used2) __builtin_trap();
  if (used1 > body.size()) __builtin_trap();
  return 0;
}
