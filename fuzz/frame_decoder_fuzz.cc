// Fuzzes the frame codecs on their own: FrameDecoder (fed in pieces whose sizes come from the
// input, so that every split point is tried), the header check, and the hello message of the
// handshake. Production does not use FrameDecoder: it parses frames in Connection::Pump and in
// the handshake, which connection_fuzz.cc and handshake_fuzz.cc fuzz on a real socket. Nothing
// may crash, hang or read out of bounds, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "net/frame.h"
#include "net/handshake.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cohort::net;
  if (size >= kFrameHeaderSize) {
    auto header = DecodeFrameHeader(data);
    if (header.ok() && header->payload_size > MaxPayloadSize(header->type)) __builtin_trap();
  }

  // The first byte chooses the piece size, the rest is the stream.
  if (size == 0) return 0;
  const size_t piece = 1 + data[0] % 64;
  FrameDecoder decoder;
  Frame frame;
  for (size_t offset = 1; offset < size; offset += piece) {
    size_t length = size - offset < piece ? size - offset : piece;
    if (!decoder.Append(data + offset, length).ok()) break;
    while (decoder.Next(&frame)) {
      if (frame.payload.size() != frame.header.payload_size) __builtin_trap();
      if (frame.header.type == FrameType::kHello || frame.header.type == FrameType::kHelloReply) {
        auto hello = DecodeHello(frame.payload);
        if (hello.ok() && !(*DecodeHello(EncodeHello(*hello)) == *hello)) __builtin_trap();
      }
    }
  }
  // The whole input as a hello payload, too.
  auto hello = DecodeHello(std::string_view(reinterpret_cast<const char*>(data + 1), size - 1));
  if (hello.ok()) EncodeHello(*hello);
  return 0;
}
