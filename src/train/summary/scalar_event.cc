#include "train/summary/scalar_event.h"

#include <cstring>

#include "base/utf8.h"

namespace cohort::train {
namespace {

// Protobuf wire types.
constexpr uint32_t kVarint = 0;
constexpr uint32_t kFixed64 = 1;
constexpr uint32_t kLengthDelimited = 2;
constexpr uint32_t kStartGroup = 3;
constexpr uint32_t kEndGroup = 4;
constexpr uint32_t kFixed32 = 5;

// Field numbers of event.proto.
constexpr uint32_t kEventWallTime = 1;
constexpr uint32_t kEventStep = 2;
constexpr uint32_t kEventFileVersion = 3;
constexpr uint32_t kEventSummary = 5;
constexpr uint32_t kEventSessionLog = 7;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1;
constexpr uint32_t kValueSimpleValue = 2;
constexpr uint32_t kSessionLogStatus = 1;
constexpr uint32_t kSessionLogCheckpointPath = 2;
constexpr uint32_t kSessionLogMessage = 3;
constexpr int32_t kSessionStart = 1;  // SessionLog.START

uint32_t Tag(uint32_t field, uint32_t wire_type) { return (field << 3) | wire_type; }

// A cursor over the bytes of one message; every read fails rather than pass `end`.
class WireReader {
 public:
  explicit WireReader(std::string_view bytes)
      : at_(reinterpret_cast<const unsigned char*>(bytes.data())), end_(at_ + bytes.size()) {}

  bool AtEnd() const { return at_ == end_; }

  // A tag: at most 5 bytes, kept to 32 bits (as protobuf reads tags).
  bool ReadTag(uint32_t* tag) {
    uint64_t value;
    if (!ReadVarint(5, &value)) return false;
    *tag = static_cast<uint32_t>(value);
    return true;
  }
  // A varint of at most 10 bytes; bits past 64 are dropped.
  bool ReadVarint64(uint64_t* value) { return ReadVarint(10, value); }
  bool ReadFixed32(uint32_t* value) { return ReadLittleEndian(value); }
  bool ReadFixed64(uint64_t* value) { return ReadLittleEndian(value); }
  // A length-delimited field's bytes: a length of at most 5 bytes below 2 GiB, then that many.
  bool ReadBytes(std::string_view* bytes) {
    const unsigned char* start = at_;
    uint64_t length;
    if (!ReadVarint(5, &length)) return false;
    if (at_ - start == 5 && start[4] >= 8) return false;
    if (length > static_cast<uint64_t>(end_ - at_)) return false;
    *bytes = std::string_view(reinterpret_cast<const char*>(at_), length);
    at_ += length;
    return true;
  }

  // Skips the value of the unknown field `tag`, `depth` levels of nesting being left. False when
  // it is malformed, or an end-group marker (which ends a group, never a message).
  bool SkipField(uint32_t tag, int depth) {
    switch (tag & 7u) {
      case kVarint: {
        uint64_t ignored;
        return ReadVarint64(&ignored);
      }
      case kFixed64: {
        uint64_t ignored;
        return ReadFixed64(&ignored);
      }
      case kLengthDelimited: {
        std::string_view ignored;
        return ReadBytes(&ignored);
      }
      case kFixed32: {
        uint32_t ignored;
        return ReadFixed32(&ignored);
      }
      case kStartGroup:
        return SkipGroup(tag >> 3, depth - 1);
      default:  // kEndGroup, and the wire types 6 and 7 that do not exist
        return false;
    }
  }

 private:
  bool ReadVarint(int max_bytes, uint64_t* value) {
    if (at_ != end_ && *at_ < 0x80) {  // one byte: most tags, lengths and steps
      *value = *at_++;
      return true;
    }
    uint64_t result = 0;
    for (int i = 0; i < max_bytes; ++i) {
      if (at_ == end_) return false;
      const unsigned char byte = *at_++;
      if (i < 10) result |= static_cast<uint64_t>(byte & 0x7fu) << (7 * i);
      if (byte < 0x80) {
        *value = result;
        return true;
      }
    }
    return false;
  }

  template <typename T>
  bool ReadLittleEndian(T* value) {
    if (static_cast<size_t>(end_ - at_) < sizeof(T)) return false;
    T result = 0;
    for (size_t i = sizeof(T); i-- > 0;) result = (result << 8) | at_[i];
    at_ += sizeof(T);
    *value = result;
    return true;
  }

  // Skips the fields of a group up to its end-group marker, which must name `field`.
  bool SkipGroup(uint32_t field, int depth) {
    if (depth < 0) return false;
    while (!AtEnd()) {
      uint32_t tag;
      if (!ReadTag(&tag) || (tag >> 3) == 0) return false;
      if ((tag & 7u) == kEndGroup) return (tag >> 3) == field;
      if (!SkipField(tag, depth)) return false;
    }
    return false;  // the message ended inside the group
  }

  const unsigned char* at_;
  const unsigned char* end_;
};

// The next tag of `reader`, failing on a field number 0.
inline bool NextTag(WireReader& reader, uint32_t* tag) {
  return reader.ReadTag(tag) && (*tag >> 3) != 0;
}

// One Summary.Value: appends it to `scalars` when it has a simple_value.
bool ParseValue(std::string_view bytes, int depth, std::vector<ScalarValue>* scalars) {
  if (depth < 0) return false;
  WireReader reader(bytes);
  ScalarValue value;
  bool has_simple_value = false;
  while (!reader.AtEnd()) {
    uint32_t tag;
    if (!NextTag(reader, &tag)) return false;
    if (tag == Tag(kValueTag, kLengthDelimited)) {
      if (!reader.ReadBytes(&value.tag) || !IsValidUtf8(value.tag)) return false;
    } else if (tag == Tag(kValueSimpleValue, kFixed32)) {
      uint32_t bits;
      if (!reader.ReadFixed32(&bits)) return false;
      std::memcpy(&value.value, &bits, sizeof(bits));
      has_simple_value = true;
    } else if (!reader.SkipField(tag, depth)) {
      return false;
    }
  }
  if (has_simple_value) scalars->push_back(value);
  return true;
}

bool ParseSummary(std::string_view bytes, int depth, std::vector<ScalarValue>* scalars) {
  if (depth < 0) return false;
  WireReader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t tag;
    if (!NextTag(reader, &tag)) return false;
    if (tag == Tag(kSummaryValue, kLengthDelimited)) {
      std::string_view value;
      if (!reader.ReadBytes(&value) || !ParseValue(value, depth - 1, scalars)) return false;
    } else if (!reader.SkipField(tag, depth)) {
      return false;
    }
  }
  return true;
}

// One SessionLog, merged into `status` (a field absent leaves it as it was).
bool ParseSessionLog(std::string_view bytes, int depth, int32_t* status) {
  if (depth < 0) return false;
  WireReader reader(bytes);
  while (!reader.AtEnd()) {
    uint32_t tag;
    if (!NextTag(reader, &tag)) return false;
    if (tag == Tag(kSessionLogStatus, kVarint)) {
      uint64_t value;
      if (!reader.ReadVarint64(&value)) return false;
      *status = static_cast<int32_t>(static_cast<uint32_t>(value));
    } else if (tag == Tag(kSessionLogCheckpointPath, kLengthDelimited) ||
               tag == Tag(kSessionLogMessage, kLengthDelimited)) {
      std::string_view text;
      if (!reader.ReadBytes(&text) || !IsValidUtf8(text)) return false;
    } else if (!reader.SkipField(tag, depth)) {
      return false;
    }
  }
  return true;
}

}  // namespace

bool ParseScalarEvent(std::string_view record, ScalarEvent* event) {
  enum class What { kNone, kFileVersion, kSummary, kSessionLog };
  What what = What::kNone;
  int32_t session_status = 0;
  event->wall_time = 0;
  event->step = 0;
  event->session_start = false;
  event->scalars.clear();
  WireReader reader(record);
  while (!reader.AtEnd()) {
    uint32_t tag;
    if (!NextTag(reader, &tag)) return false;
    if (tag == Tag(kEventWallTime, kFixed64)) {
      uint64_t bits;
      if (!reader.ReadFixed64(&bits)) return false;
      std::memcpy(&event->wall_time, &bits, sizeof(bits));
    } else if (tag == Tag(kEventStep, kVarint)) {
      uint64_t step;
      if (!reader.ReadVarint64(&step)) return false;
      event->step = static_cast<int64_t>(step);
    } else if (tag == Tag(kEventFileVersion, kLengthDelimited)) {
      std::string_view version;
      if (!reader.ReadBytes(&version) || !IsValidUtf8(version)) return false;
      what = What::kFileVersion;
    } else if (tag == Tag(kEventSummary, kLengthDelimited)) {
      if (what != What::kSummary) event->scalars.clear();  // a new summary replaces the oneof
      what = What::kSummary;
      std::string_view summary;
      if (!reader.ReadBytes(&summary) || !ParseSummary(summary, kMaxNesting - 1, &event->scalars)) {
        return false;
      }
    } else if (tag == Tag(kEventSessionLog, kLengthDelimited)) {
      if (what != What::kSessionLog) session_status = 0;
      what = What::kSessionLog;
      std::string_view session_log;
      if (!reader.ReadBytes(&session_log) ||
          !ParseSessionLog(session_log, kMaxNesting - 1, &session_status)) {
        return false;
      }
    } else if (!reader.SkipField(tag, kMaxNesting)) {
      return false;
    }
  }
  if (what != What::kSummary) event->scalars.clear();
  event->session_start = what == What::kSessionLog && session_status == kSessionStart;
  return true;
}

}  // namespace cohort::train
