// Job secret and the HMAC-SHA256 proofs that keep processes outside a job from joining it.
//
// Every task of a job receives the same secret in COHORT_JOB_SECRET. When two tasks connect, each
// proves that it knows the secret without revealing it: it sends HMAC-SHA256(secret, transcript),
// where the transcript holds a fresh random nonce from each side, so a recorded proof is useless
// for any later connection. With no secret set the transport runs in open mode: it still checks
// job name and task identity, but any process that can reach the port can pass for a task, so the
// transport warns loudly.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort::net {

inline constexpr char kJobSecretVariable[] = "COHORT_JOB_SECRET";
inline constexpr size_t kNonceSize = 32;
inline constexpr size_t kProofSize = 32;  // SHA-256 output

class JobSecret {
 public:
  JobSecret() = default;  // open mode
  explicit JobSecret(std::string key) : key_(std::move(key)) {}

  // The secret in COHORT_JOB_SECRET; open mode when it is unset or empty.
  static JobSecret FromEnvironment();

  // False in open mode.
  bool authenticated() const { return !key_.empty(); }
  const std::string& key() const { return key_; }

 private:
  std::string key_;
};

// `size` cryptographically random bytes (OpenSSL RAND_bytes).
StatusOr<std::string> RandomBytes(size_t size);

// HMAC-SHA256 of `message` under `key`: 32 raw bytes.
std::string HmacSha256(std::string_view key, std::string_view message);

// Compares without an early exit, so the time taken does not reveal how many leading bytes of a
// forged proof were right.
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace cohort::net
