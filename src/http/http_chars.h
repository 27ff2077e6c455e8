// Byte classes of HTTP/1.1 message syntax (RFC 9110 section 5.5, RFC 9112)
// that the request-head parser and the chunked decoder share.
#pragma once

namespace strata::http {

// CTL but HTAB: refused in field values, chunk extensions and trailers.
inline bool is_control(unsigned char c) {
  return (c < 0x20 && c != '\t') || c == 0x7f;
}

}  // namespace strata::http
