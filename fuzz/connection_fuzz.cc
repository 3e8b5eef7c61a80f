// Fuzzes the stream parser that production uses after the handshake: Connection::Pump reading
// from a real socket (net/connection.h), with receives posted the way an Exchange posts them.
// The input is what an authenticated but hostile or broken peer writes; it goes through a
// socketpair in pieces, with Pump called after each piece, so that frames are split at every
// point, and posted receives that do not match the frames (tag, size) are tried too. Nothing may
// crash or read or write out of bounds; each input ends after a bounded number of steps, since
// Pump never blocks.
//
// Input layout:
//   byte 0      piece size: 1 + byte % 64 stream bytes are written before each Pump
//   byte 1      bit 0: discard unclaimed data (as after a failure); bit 1: queue a heartbeat
//               before each Pump; bit 2: end the stream (the peer shuts down its writing) once
//               written; bits 3-4: how many of the receives below are posted at the start
//   bytes 2-13  four receives, 3 bytes each: tag (1 byte), size (2 bytes little-endian, modulo
//               4097). Those not posted at the start are posted one at a time when the connection
//               stops at a data frame that has no receive, as an operation does when it gets to it
//   the rest    the peer's byte stream
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "net/connection.h"
#include "net/socket.h"

namespace {

constexpr size_t kReceives = 4;
constexpr size_t kPreludeSize = 2 + 3 * kReceives;

struct PlannedReceive {
  uint64_t tag;
  std::vector<uint8_t> buffer;
};

// Reads and drops what the connection wrote to the peer (heartbeats, failure notices), so that
// its writes never stop for want of room.
void DrainPeerEnd(int fd) {
  uint8_t sink[4096];
  while (read(fd, sink, sizeof(sink)) > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cohort;
  using namespace cohort::net;
  if (size < kPreludeSize) return 0;
  const size_t piece = 1 + data[0] % 64;
  const bool discard_unclaimed_data = data[1] & 1;
  const bool queue_heartbeats = data[1] & 2;
  const bool end_stream = data[1] & 4;
  const size_t posted_at_start = (data[1] >> 3) & 3;
  std::vector<PlannedReceive> receives(kReceives);
  for (size_t i = 0; i < kReceives; ++i) {
    const uint8_t* at = data + 2 + 3 * i;
    receives[i].tag = at[0];
    receives[i].buffer.resize((at[1] | (at[2] << 8)) % 4097);
  }
  const uint8_t* stream = data + kPreludeSize;
  const size_t stream_size = size - kPreludeSize;

  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) return 0;
  Socket peer(fds[1]);
  if (!SetNonBlocking(fds[0]).ok() || !SetNonBlocking(fds[1]).ok()) {
    close(fds[0]);
    return 0;
  }
  Connection connection(1, "worker:1 (fuzz)", Socket(fds[0]), ProcessIdentity{}, false);
  std::lock_guard<std::mutex> lock(connection.io_mutex());
  size_t posted = 0;
  auto post_next = [&] {
    PlannedReceive& receive = receives[posted++];
    connection.PostReceive(receive.tag, receive.buffer.data(),
                           static_cast<uint32_t>(receive.buffer.size()));
  };
  while (posted < posted_at_start) post_next();

  size_t written = 0;
  bool ended = false;
  while (true) {
    bool progress = false;
    if (written < stream_size) {
      size_t length = stream_size - written < piece ? stream_size - written : piece;
      ssize_t sent = write(peer.fd(), stream + written, length);
      if (sent > 0) {
        written += static_cast<size_t>(sent);
        progress = true;
      }
    } else if (end_stream && !ended) {
      shutdown(peer.fd(), SHUT_WR);
      ended = true;
      progress = true;
    }
    if (queue_heartbeats) {
      connection.MaybeQueueHeartbeat(SteadyClock::now(), std::chrono::nanoseconds::zero());
    }
    Status status = connection.Pump(discard_unclaimed_data);
    DrainPeerEnd(peer.fd());
    if (!status.ok() || connection.state() != Connection::State::kOpen) break;
    if (connection.BlockedOnUnclaimedData() && posted < kReceives) {
      post_next();
      progress = true;
    }
    if (!progress) break;
  }

  if (connection.data_frames_received() > posted) __builtin_trap();
  connection.PollEvents(discard_unclaimed_data);
  IgnoreError(connection.CheckLiveness(SteadyClock::now(), std::chrono::hours(1)),
              "any verdict on the fuzzer's bytes is fine; only a crash is not");
  // An operation that ends early, then the monitor's reading after a failure.
  connection.AbandonTransfers();
  IgnoreError(connection.Pump(true),
              "any verdict on the fuzzer's bytes is fine; only a crash is not");
  DrainPeerEnd(peer.fd());
  return 0;
}
