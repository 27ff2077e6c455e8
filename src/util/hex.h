// Lowercase hexadecimal text of a byte string (two digits per byte), as used
// for printing hashes and cache keys. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace strata {

std::string to_hex(std::span<const uint8_t> bytes);

}  // namespace strata
