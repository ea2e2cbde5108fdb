// SHA-256 (OpenSSL), for what must not collide with a crafted input: code objects' checksums,
// the keys of kernels built from source.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tiletune {

// Lower-case hex, 64 characters.
std::string sha256_hex(const void* data, std::size_t size);
inline std::string sha256_hex(const std::string& text) { return sha256_hex(text.data(), text.size()); }
inline std::string sha256_hex(const std::vector<std::uint8_t>& bytes) { return sha256_hex(bytes.data(), bytes.size()); }

}  // namespace tiletune
