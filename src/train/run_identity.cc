#include "train/run_identity.h"

#include <string_view>

#include "base/hex.h"

namespace cohort::train {

std::string RunIdentity(const net::JobSecret& secret) {
  if (!secret.authenticated()) return "";
  const std::string digest = net::HmacSha256(secret.key(), "cohort final checkpoint run");
  return HexEncode(std::string_view(digest).substr(0, 8));
}

}  // namespace cohort::train
