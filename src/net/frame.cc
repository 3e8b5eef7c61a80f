#include "net/frame.h"

#include <cstring>

namespace cohort::net {
namespace {

void PutU16(uint8_t* out, uint16_t value) {
  out[0] = static_cast<uint8_t>(value);
  out[1] = static_cast<uint8_t>(value >> 8);
}
void PutU32(uint8_t* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
void PutU64(uint8_t* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(value >> (8 * i));
}
uint16_t GetU16(const uint8_t* in) { return static_cast<uint16_t>(in[0] | (in[1] << 8)); }
uint32_t GetU32(const uint8_t* in) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}
uint64_t GetU64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

bool IsKnownType(uint8_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kHello:
    case FrameType::kHelloReply:
    case FrameType::kProof:
    case FrameType::kAccept:
    case FrameType::kReject:
    case FrameType::kData:
    case FrameType::kHeartbeat:
    case FrameType::kPeerFailed:
    case FrameType::kGoodbye:
    case FrameType::kRequest:
    case FrameType::kResponse:
      return true;
  }
  return false;
}

}  // namespace

std::string FrameTypeName(uint8_t type) {
  switch (static_cast<FrameType>(type)) {
    case FrameType::kHello:
      return "hello";
    case FrameType::kHelloReply:
      return "hello reply";
    case FrameType::kProof:
      return "proof";
    case FrameType::kAccept:
      return "accept";
    case FrameType::kReject:
      return "reject";
    case FrameType::kData:
      return "data";
    case FrameType::kHeartbeat:
      return "heartbeat";
    case FrameType::kPeerFailed:
      return "peer failed";
    case FrameType::kGoodbye:
      return "goodbye";
    case FrameType::kRequest:
      return "request";
    case FrameType::kResponse:
      return "response";
  }
  return "type " + std::to_string(type);
}

uint32_t MaxPayloadSize(FrameType type) {
  switch (type) {
    case FrameType::kData:
    case FrameType::kRequest:
    case FrameType::kResponse:
      return kMaxDataPayload;
    case FrameType::kHeartbeat:
    case FrameType::kGoodbye:
    case FrameType::kAccept:
      return 0;
    default:
      return kMaxControlPayload;
  }
}

void EncodeFrameHeader(const FrameHeader& header, uint8_t out[kFrameHeaderSize]) {
  std::memcpy(out, kFrameMagic, 4);
  out[4] = kProtocolVersion;
  out[5] = static_cast<uint8_t>(header.type);
  PutU16(out + 6, 0);
  PutU64(out + 8, header.tag);
  PutU32(out + 16, header.payload_size);
  PutU32(out + 20, 0);
}

StatusOr<FrameHeader> DecodeFrameHeader(const uint8_t bytes[kFrameHeaderSize]) {
  if (std::memcmp(bytes, kFrameMagic, 4) != 0) {
    return Status::InvalidArgument("bad frame magic: not a Cohort connection");
  }
  if (bytes[4] != kProtocolVersion) {
    return Status::InvalidArgument("unsupported protocol version " + std::to_string(bytes[4]) +
                                   " (this build speaks version " +
                                   std::to_string(kProtocolVersion) + ")");
  }
  if (!IsKnownType(bytes[5])) {
    return Status::InvalidArgument("unknown frame " + FrameTypeName(bytes[5]));
  }
  if (GetU16(bytes + 6) != 0 || GetU32(bytes + 20) != 0) {
    return Status::InvalidArgument("frame header has reserved bits set");
  }
  FrameHeader header;
  header.type = static_cast<FrameType>(bytes[5]);
  header.tag = GetU64(bytes + 8);
  header.payload_size = GetU32(bytes + 16);
  if (header.payload_size > MaxPayloadSize(header.type)) {
    return Status::InvalidArgument(
        FrameTypeName(bytes[5]) + " frame claims " + std::to_string(header.payload_size) +
        " payload bytes; at most " + std::to_string(MaxPayloadSize(header.type)) + " are allowed");
  }
  return header;
}

std::string EncodeFrame(FrameType type, uint64_t tag, std::string_view payload) {
  std::string frame(kFrameHeaderSize, '\0');
  EncodeFrameHeader({type, tag, static_cast<uint32_t>(payload.size())},
                    reinterpret_cast<uint8_t*>(frame.data()));
  frame.append(payload);
  return frame;
}

Status FrameDecoder::Append(const uint8_t* data, size_t size) {
  if (!error_.ok()) return error_;
  pending_.append(reinterpret_cast<const char*>(data), size);
  size_t consumed = 0;
  while (pending_.size() - consumed >= kFrameHeaderSize) {
    auto header = DecodeFrameHeader(reinterpret_cast<const uint8_t*>(pending_.data() + consumed));
    if (!header.ok()) {
      error_ = header.status();
      pending_.clear();
      return error_;
    }
    size_t frame_size = kFrameHeaderSize + header->payload_size;
    if (pending_.size() - consumed < frame_size) break;
    frames_.push_back(
        Frame{*header, pending_.substr(consumed + kFrameHeaderSize, header->payload_size)});
    consumed += frame_size;
  }
  pending_.erase(0, consumed);
  return Status::OK();
}

bool FrameDecoder::Next(Frame* frame) {
  if (frames_.empty()) return false;
  *frame = std::move(frames_.front());
  frames_.pop_front();
  return true;
}

void WireWriter::U32(uint32_t value) {
  uint8_t bytes[4];
  PutU32(bytes, value);
  bytes_.append(reinterpret_cast<char*>(bytes), 4);
}

void WireWriter::U64(uint64_t value) {
  uint8_t bytes[8];
  PutU64(bytes, value);
  bytes_.append(reinterpret_cast<char*>(bytes), 8);
}

void WireWriter::String(std::string_view value) {
  if (value.size() > 0xFFFF) value = value.substr(0, 0xFFFF);
  uint8_t length[2];
  PutU16(length, static_cast<uint16_t>(value.size()));
  bytes_.append(reinterpret_cast<char*>(length), 2);
  bytes_.append(value);
}

bool WireReader::Take(size_t size) {
  if (!ok_ || bytes_.size() - offset_ < size) {
    ok_ = false;
    return false;
  }
  return true;
}

uint8_t WireReader::U8() {
  if (!Take(1)) return 0;
  return static_cast<uint8_t>(bytes_[offset_++]);
}

uint32_t WireReader::U32() {
  if (!Take(4)) return 0;
  uint32_t value = GetU32(reinterpret_cast<const uint8_t*>(bytes_.data() + offset_));
  offset_ += 4;
  return value;
}

uint64_t WireReader::U64() {
  if (!Take(8)) return 0;
  uint64_t value = GetU64(reinterpret_cast<const uint8_t*>(bytes_.data() + offset_));
  offset_ += 8;
  return value;
}

std::string WireReader::String() {
  if (!Take(2)) return "";
  size_t length = GetU16(reinterpret_cast<const uint8_t*>(bytes_.data() + offset_));
  offset_ += 2;
  return Bytes(length);
}

std::string WireReader::Bytes(size_t size) {
  if (!Take(size)) return "";
  std::string value(bytes_.substr(offset_, size));
  offset_ += size;
  return value;
}

Status WireReader::Finish(const std::string& what) const {
  if (!ok_) return Status::InvalidArgument(what + " is truncated");
  if (offset_ != bytes_.size()) {
    return Status::InvalidArgument(what + " has " + std::to_string(bytes_.size() - offset_) +
                                   " unexpected trailing bytes");
  }
  return Status::OK();
}

}  // namespace cohort::net
