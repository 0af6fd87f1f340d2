// SHA-256 (the compile cache's keys, imported tasks' artifacts) by OpenSSL's libcrypto.
#include "configs/sha256.h"

#include <openssl/evp.h>

#include "configs/error.h"

namespace kforge {

std::string sha256_hex(const std::string& data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  KFORGE_CHECK(EVP_Digest(data.data(), data.size(), digest, &n, EVP_sha256(), nullptr) == 1 && n == 32, internal,
               "OpenSSL's SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(64);
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 15]);
  }
  return out;
}

}  // namespace kforge
