#include "net/frame.h"

#include <gtest/gtest.h>

#include <random>

namespace cohort::net {
namespace {

std::string Header(FrameType type, uint64_t tag, uint32_t size) {
  uint8_t bytes[kFrameHeaderSize];
  EncodeFrameHeader({type, tag, size}, bytes);
  return std::string(reinterpret_cast<char*>(bytes), sizeof(bytes));
}

StatusOr<FrameHeader> Decode(const std::string& bytes) {
  return DecodeFrameHeader(reinterpret_cast<const uint8_t*>(bytes.data()));
}

TEST(FrameHeaderTest, RoundTrips) {
  auto header = Decode(Header(FrameType::kData, 0x0123456789ABCDEFull, 4096));
  ASSERT_TRUE(header.ok()) << header.status().ToString();
  EXPECT_EQ(header->type, FrameType::kData);
  EXPECT_EQ(header->tag, 0x0123456789ABCDEFull);
  EXPECT_EQ(header->payload_size, 4096u);
}

TEST(FrameHeaderTest, LayoutIsLittleEndianWithMagicFirst) {
  std::string bytes = Header(FrameType::kHeartbeat, 1, 0);
  EXPECT_EQ(bytes.substr(0, 4), "CHRT");
  EXPECT_EQ(static_cast<uint8_t>(bytes[4]), kProtocolVersion);
  EXPECT_EQ(static_cast<uint8_t>(bytes[5]), static_cast<uint8_t>(FrameType::kHeartbeat));
  EXPECT_EQ(static_cast<uint8_t>(bytes[8]), 1);
}

TEST(FrameHeaderTest, RejectsBadMagic) {
  std::string bytes = Header(FrameType::kData, 0, 8);
  bytes[0] = 'G';  // "GHRT"; an HTTP request would start "GET "
  auto header = Decode(bytes);
  ASSERT_FALSE(header.ok());
  EXPECT_NE(header.status().message().find("magic"), std::string::npos);
}

TEST(FrameHeaderTest, RejectsOtherVersions) {
  std::string bytes = Header(FrameType::kData, 0, 8);
  bytes[4] = 2;
  auto header = Decode(bytes);
  ASSERT_FALSE(header.ok());
  EXPECT_NE(header.status().message().find("version 2"), std::string::npos);
}

TEST(FrameHeaderTest, RejectsUnknownTypesAndReservedBits) {
  std::string unknown = Header(FrameType::kData, 0, 8);
  unknown[5] = 99;
  EXPECT_FALSE(Decode(unknown).ok());
  std::string flags = Header(FrameType::kData, 0, 8);
  flags[6] = 1;
  EXPECT_FALSE(Decode(flags).ok());
  std::string reserved = Header(FrameType::kData, 0, 8);
  reserved[23] = 1;
  EXPECT_FALSE(Decode(reserved).ok());
}

TEST(FrameHeaderTest, RejectsAbsurdLengths) {
  auto data = Decode(Header(FrameType::kData, 0, kMaxDataPayload + 1));
  ASSERT_FALSE(data.ok());
  EXPECT_NE(data.status().message().find("at most"), std::string::npos);
  EXPECT_FALSE(Decode(Header(FrameType::kData, 0, 0xFFFFFFFFu)).ok());
  EXPECT_FALSE(Decode(Header(FrameType::kHello, 0, kMaxControlPayload + 1)).ok());
  EXPECT_FALSE(Decode(Header(FrameType::kHeartbeat, 0, 1)).ok());
  EXPECT_TRUE(Decode(Header(FrameType::kData, 0, kMaxDataPayload)).ok());
}

TEST(FrameDecoderTest, ReassemblesFramesFromAnyPieces) {
  std::string stream = EncodeFrame(FrameType::kHello, 0, "hello") +
                       EncodeFrame(FrameType::kHeartbeat, 0, "") +
                       EncodeFrame(FrameType::kData, 7, std::string(1000, 'x'));
  for (size_t piece : {1, 2, 5, 23, 24, 25, 100, 4096}) {
    FrameDecoder decoder;
    for (size_t offset = 0; offset < stream.size(); offset += piece) {
      size_t size = std::min(piece, stream.size() - offset);
      ASSERT_TRUE(
          decoder.Append(reinterpret_cast<const uint8_t*>(stream.data() + offset), size).ok());
    }
    Frame frame;
    ASSERT_TRUE(decoder.Next(&frame));
    EXPECT_EQ(frame.header.type, FrameType::kHello);
    EXPECT_EQ(frame.payload, "hello");
    ASSERT_TRUE(decoder.Next(&frame));
    EXPECT_EQ(frame.header.type, FrameType::kHeartbeat);
    ASSERT_TRUE(decoder.Next(&frame));
    EXPECT_EQ(frame.header.tag, 7u);
    EXPECT_EQ(frame.payload.size(), 1000u);
    EXPECT_FALSE(decoder.Next(&frame));
    EXPECT_EQ(decoder.buffered_bytes(), 0u);
  }
}

TEST(FrameDecoderTest, TruncatedFrameIsNotDelivered) {
  std::string frame = EncodeFrame(FrameType::kData, 1, "payload");
  FrameDecoder decoder;
  ASSERT_TRUE(
      decoder.Append(reinterpret_cast<const uint8_t*>(frame.data()), frame.size() - 1).ok());
  Frame out;
  EXPECT_FALSE(decoder.Next(&out));
  EXPECT_EQ(decoder.buffered_bytes(), frame.size() - 1);
}

TEST(FrameDecoderTest, MalformedHeaderPoisonsTheStream) {
  FrameDecoder decoder;
  std::string garbage = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  Status status = decoder.Append(reinterpret_cast<const uint8_t*>(garbage.data()), garbage.size());
  EXPECT_FALSE(status.ok());
  std::string good = EncodeFrame(FrameType::kHeartbeat, 0, "");
  EXPECT_FALSE(decoder.Append(reinterpret_cast<const uint8_t*>(good.data()), good.size()).ok());
  Frame out;
  EXPECT_FALSE(decoder.Next(&out));
}

TEST(FrameDecoderTest, RandomBytesNeverCrash) {
  std::mt19937 random(42);
  for (int round = 0; round < 2000; ++round) {
    std::string bytes(random() % 200, '\0');
    for (char& byte : bytes) byte = static_cast<char>(random());
    if (random() % 2) bytes.replace(0, std::min<size_t>(4, bytes.size()), "CHRT");
    FrameDecoder decoder;
    IgnoreError(decoder.Append(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
                "random bytes may be refused; only a crash would be wrong");
    Frame out;
    while (decoder.Next(&out)) {
    }
  }
}

TEST(WireTest, ReadsWhatWasWritten) {
  WireWriter writer;
  writer.U8(7);
  writer.U32(0xDEADBEEF);
  writer.U64(1ull << 40);
  writer.String("worker");
  WireReader reader(writer.bytes());
  EXPECT_EQ(reader.U8(), 7);
  EXPECT_EQ(reader.U32(), 0xDEADBEEFu);
  EXPECT_EQ(reader.U64(), 1ull << 40);
  EXPECT_EQ(reader.String(), "worker");
  EXPECT_TRUE(reader.Finish("test").ok());
}

TEST(WireTest, TruncationAndTrailingBytesAreErrors) {
  WireWriter writer;
  writer.String("abcdef");
  std::string truncated = writer.bytes().substr(0, 4);
  WireReader short_reader(truncated);
  short_reader.String();
  EXPECT_FALSE(short_reader.Finish("message").ok());
  std::string longer = writer.bytes() + "x";
  WireReader long_reader(longer);
  long_reader.String();
  Status status = long_reader.Finish("message");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("trailing"), std::string::npos);
}

}  // namespace
}  // namespace cohort::net
