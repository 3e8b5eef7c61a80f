// Fuzzes the handshake as production runs it (net/handshake.h): AcceptHandshake, which reads
// whatever any process that reaches a task's port sends, and ConnectHandshake, which reads what
// the listening side answers; both over a socketpair, so that their own frame reading (header
// check, payload of the announced size), the hello and hello-reply parsing and the proof checks
// all see the fuzzer's bytes. The input is written to the other end and that end's writing is
// shut down, so a handshake that wants more than the input holds fails at once on the end of the
// stream instead of waiting; the short deadline is a second guard.
//
// Input layout:
//   byte 0    bit 0: which side runs (0: the accepting side, 1: the connecting side); bit 1: the
//             side has a job secret (otherwise open mode); bit 2: the accepting side's admission
//             rule refuses every task
//   the rest  the other side's bytes
//
// The accepting side is chief:0 of job "fuzz-job"; the connecting side is worker:1 of that job and
// means to reach chief:0. In open mode the fuzzer can complete a handshake (the seeds do); with a
// secret it can only fail, since the proofs sign fresh random nonces.
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "net/handshake.h"
#include "net/socket.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cohort;
  using namespace cohort::net;
  if (size < 1) return 0;
  const bool connecting = data[0] & 1;
  const bool with_secret = data[0] & 2;
  const bool refuse_everyone = data[0] & 4;

  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  Socket self(fds[0]), other(fds[1]);
  if (!SetNonBlocking(self.fd()).ok() || !SetNonBlocking(other.fd()).ok()) return 0;
  // As much of the input as the socket takes without blocking (all of it, for inputs of the
  // sizes the fuzzer is run with), then the end of the stream.
  size_t written = 0;
  while (written < size - 1) {
    ssize_t sent = write(other.fd(), data + 1 + written, size - 1 - written);
    if (sent <= 0) break;
    written += static_cast<size_t>(sent);
  }
  shutdown(other.fd(), SHUT_WR);

  HandshakeConfig config;
  config.job_name = "fuzz-job";
  config.secret = JobSecret(with_secret ? "fuzz secret" : "");
  config.deadline = Deadline::After(std::chrono::milliseconds(200));
  const cluster::TaskId chief{"chief", 0};
  const cluster::TaskId worker{"worker", 1};
  if (connecting) {
    config.self = worker;
    auto result = ConnectHandshake(self.fd(), config, chief, "chief:0 (fuzz)");
    // A handshake succeeds only with the task it meant to reach, and never against a secret.
    if (result.ok() &&
        (with_secret || result->peer.task != chief || result->peer.job_name != "fuzz-job")) {
      __builtin_trap();
    }
  } else {
    config.self = chief;
    auto result = AcceptHandshake(self.fd(), config, [&](const HelloMessage&) {
      return refuse_everyone ? Status::FailedPrecondition("refused") : Status::OK();
    });
    if (result.ok() && (with_secret || refuse_everyone || result->peer.addressee != chief)) {
      __builtin_trap();
    }
  }
  return 0;
}
