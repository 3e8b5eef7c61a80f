#include "job/job_secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstring>

#include "base/hex.h"

namespace cohort::job {

StatusOr<std::string> NewJobSecret() {
  std::string bytes(kJobSecretBytes, '\0');
  size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      return Status::Internal(std::string("getrandom(2) gave no randomness for the job secret: ") +
                              std::strerror(errno));
    }
    filled += static_cast<size_t>(got);
  }
  return HexEncode(bytes);
}

}  // namespace cohort::job
