// Frames: how bytes on a Cohort connection are cut into messages.
//
// Every message is a 24-byte header followed by `payload_size` bytes of payload:
//
//   offset  size  field
//   0       4     magic "CHRT" (bytes 0x43 0x48 0x52 0x54)
//   4       1     protocol version (kProtocolVersion)
//   5       1     frame type (FrameType)
//   6       2     flags, must be 0 (reserved for later versions)
//   8       8     tag, little-endian: which collective operation a data frame belongs to
//   16      4     payload size, little-endian
//   20      4     reserved, must be 0
//
// The header is versioned so that a peer built from another release is refused with a clear
// message instead of being misread, and the magic catches anything that is not Cohort (an HTTP
// health probe, a port scanner) before a single length is trusted. Payload sizes are bounded per
// frame type, so a corrupt or hostile length can never make a reader allocate or wait for
// gigabytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>

#include "base/status.h"

namespace cohort::net {

inline constexpr uint8_t kFrameMagic[4] = {'C', 'H', 'R', 'T'};
inline constexpr uint8_t kProtocolVersion = 1;
inline constexpr size_t kFrameHeaderSize = 24;

// The largest data payload one frame may carry. Collective algorithms cut their buffers into
// segments far smaller than this; the bound only rejects absurd lengths.
inline constexpr uint32_t kMaxDataPayload = 64u << 20;
// The largest payload of any control frame (handshake, failure notice).
inline constexpr uint32_t kMaxControlPayload = 4096;

enum class FrameType : uint8_t {
  // Handshake, in order: the connecting task says who it is, the accepting task answers with its
  // own identity and proof of the job secret, the connecting task proves it knows the secret too,
  // and the accepting task admits it (or refuses, with a reason).
  kHello = 1,
  kHelloReply = 2,
  kProof = 3,
  kAccept = 4,
  kReject = 5,
  // After the handshake.
  kData = 16,        // payload of a collective operation, tagged with that operation
  kHeartbeat = 17,   // "still alive"; sent when a link has been quiet for a heartbeat interval
  kPeerFailed = 18,  // "this peer failed, and here is why": spreads a failure to every task
  kGoodbye = 19,     // orderly shutdown: the sender sends nothing more
  // Client-server traffic (src/ps). The tag is the request id, which the response repeats, so a
  // client can have several requests in flight on one connection. Both carry bulk values (a dense
  // slice, embedding rows) and are bounded like data frames.
  kRequest = 20,
  kResponse = 21,
};

// "hello", "data"... or "type 42" for a value that is not a FrameType.
std::string FrameTypeName(uint8_t type);

struct FrameHeader {
  FrameType type = FrameType::kData;
  uint64_t tag = 0;
  uint32_t payload_size = 0;
};

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]);

// Checks every field of a received header: magic, version, known type, zero flags and reserved
// bytes, and a payload size within the bound for its type. InvalidArgument says which check
// failed.
StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t bytes[kFrameHeaderSize]);

// The largest payload a frame of `type` may carry (0 for heartbeats and goodbyes).
uint32_t MaxPayloadSize(FrameType type);

struct Frame {
  FrameHeader header;
  std::string payload;
};

// Encodes a whole frame (header and payload) into one string; for control frames.
std::string EncodeFrame(FrameType type, uint64_t tag, std::string_view payload);

// Cuts a byte stream into frames. Bytes may arrive in any pieces; a frame is available once all
// of it has arrived. The first malformed header poisons the decoder: every later call returns the
// same error, because nothing after a bad header can be trusted to be a frame boundary.
class FrameDecoder {
 public:
  // Appends bytes and decodes every frame they complete.
  Status Append(const uint8_t* data, size_t size);
  // Takes the oldest complete frame; false when there is none.
  bool Next(Frame* frame);
  // Bytes received that do not yet form a complete frame.
  size_t buffered_bytes() const { return pending_.size(); }

 private:
  std::string pending_;
  std::deque<Frame> frames_;
  Status error_;
};

// Writes the fields of a control payload: fixed-width little-endian integers and strings with a
// 16-bit length prefix.
class WireWriter {
 public:
  void U8(uint8_t value) { bytes_.push_back(static_cast<char>(value)); }
  void U32(uint32_t value);
  void U64(uint64_t value);
  void String(std::string_view value);  // at most 65535 bytes; longer strings are cut
  void Bytes(std::string_view value) { bytes_.append(value); }
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

// Reads what WireWriter wrote. Any read past the end sets a sticky error instead of reading out of
// bounds; check ok() (or Finish(), which also insists that every byte was consumed) at the end.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}
  uint8_t U8();
  uint32_t U32();
  uint64_t U64();
  std::string String();
  std::string Bytes(size_t size);
  bool ok() const { return ok_; }
  // OK when every field was read and nothing is left over; otherwise says what `what` lacked.
  Status Finish(const std::string& what) const;

 private:
  bool Take(size_t size);
  std::string_view bytes_;
  size_t offset_ = 0;
  bool ok_ = true;
};

}  // namespace cohort::net
