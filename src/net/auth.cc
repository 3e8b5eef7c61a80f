#include "net/auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstdlib>

namespace cohort::net {

JobSecret JobSecret::FromEnvironment() {
  const char* value = std::getenv(kJobSecretVariable);
  return JobSecret(value == nullptr ? "" : value);
}

StatusOr<std::string> RandomBytes(size_t size) {
  std::string bytes(size, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(bytes.data()), static_cast<int>(size)) != 1) {
    return Status::Internal("OpenSSL RAND_bytes failed: no randomness for the handshake nonce");
  }
  return bytes;
}

std::string HmacSha256(std::string_view key, std::string_view message) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_size = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest,
       &digest_size);
  return std::string(reinterpret_cast<char*>(digest), digest_size);
}

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace cohort::net
