// ParseScalarEvent against protobuf's own parser of event.proto: the same answer (valid or not;
// step, wall time, START, every simple value) on records written through the generated classes,
// on records built field by field at the wire level (unknown fields and groups, repeated and
// replaced oneof members, overlong varints, bad UTF-8), and on those records mutated.
#include "train/summary/scalar_event.h"

#include <google/protobuf/stubs/logging.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "train/summary/event.pb.h"

namespace cohort::train {
namespace {

// What a reader of curves takes from one record, whichever parser read it.
struct Reading {
  bool valid = false;
  int64_t step = 0;
  uint64_t wall_time_bits = 0;
  bool session_start = false;
  std::vector<std::pair<std::string, uint32_t>> scalars;  // tag, value bits

  bool operator==(const Reading&) const = default;
};

std::string Describe(const Reading& reading) {
  if (!reading.valid) return "invalid";
  std::string text = "step " + std::to_string(reading.step) + " wall " +
                     std::to_string(reading.wall_time_bits) +
                     (reading.session_start ? " START" : "") + " scalars";
  for (const auto& [tag, bits] : reading.scalars) text += " " + tag + "=" + std::to_string(bits);
  return text;
}

std::string Hex(const std::string& bytes) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : bytes) hex += {kDigits[byte >> 4], kDigits[byte & 15], ' '};
  return hex;
}

Reading WithProtobuf(const std::string& record) {
  Reading reading;
  proto::Event event;
  reading.valid = event.ParseFromArray(record.data(), static_cast<int>(record.size()));
  if (!reading.valid) return reading;
  reading.step = event.step();
  const double wall_time = event.wall_time();
  std::memcpy(&reading.wall_time_bits, &wall_time, sizeof(wall_time));
  reading.session_start =
      event.has_session_log() && event.session_log().status() == proto::SessionLog::START;
  if (event.has_summary()) {
    for (const proto::Summary::Value& value : event.summary().value()) {
      if (!value.has_simple_value()) continue;
      const float simple_value = value.simple_value();
      uint32_t bits;
      std::memcpy(&bits, &simple_value, sizeof(bits));
      reading.scalars.emplace_back(value.tag(), bits);
    }
  }
  return reading;
}

Reading WithScalarEvent(const std::string& record) {
  Reading reading;
  ScalarEvent event;
  event.scalars.push_back({"left over from an earlier record", 1});
  reading.valid = ParseScalarEvent(record, &event);
  if (!reading.valid) return reading;
  reading.step = event.step;
  std::memcpy(&reading.wall_time_bits, &event.wall_time, sizeof(event.wall_time));
  reading.session_start = event.session_start;
  for (const ScalarValue& value : event.scalars) {
    uint32_t bits;
    std::memcpy(&bits, &value.value, sizeof(bits));
    reading.scalars.emplace_back(std::string(value.tag), bits);
  }
  return reading;
}

// Records built at the wire level, field by field, from a seeded generator.
class WireWriter {
 public:
  explicit WireWriter(uint32_t seed) : random_(seed) {}

  std::string Event() {
    std::string out;
    const int fields = Below(7);
    for (int i = 0; i < fields; ++i) {
      switch (Below(9)) {
        case 0:
          Key(1, 1, &out);
          Fixed(random_() * uint64_t{0x100000001}, 8, &out);
          break;
        case 1:
          Key(2, 0, &out);
          Varint(Below(4) == 0 ? random_() * uint64_t{0x100000001} : Below(100000), &out);
          break;
        case 2:
          Key(3, 2, &out);
          Bytes(Text(), &out);
          break;
        case 3:
        case 4:
        case 5:
          Key(5, 2, &out);
          Bytes(Summary(), &out);
          break;
        case 6:
          Key(7, 2, &out);
          Bytes(SessionLog(), &out);
          break;
        default:
          Unknown(2, &out);
      }
    }
    return out;
  }

  // Changes `record` a little: flips, drops, inserts or overwrites bytes, or cuts it short.
  std::string Mutate(std::string record) {
    const int changes = 1 + Below(3);
    for (int i = 0; i < changes; ++i) {
      const size_t at = record.empty() ? 0 : Below(static_cast<uint32_t>(record.size()));
      switch (Below(5)) {
        case 0:
          if (!record.empty()) record[at] = static_cast<char>(record[at] ^ (1 << Below(8)));
          break;
        case 1:
          if (!record.empty()) record.erase(at, 1);
          break;
        case 2:
          record.insert(at, 1, static_cast<char>(random_()));
          break;
        case 3:
          if (!record.empty()) record[at] = static_cast<char>(random_());
          break;
        default:
          record.resize(at);
      }
    }
    return record;
  }

 private:
  uint32_t Below(uint32_t n) { return static_cast<uint32_t>(random_() % n); }

  // A varint, sometimes in more bytes than it needs (protobuf accepts up to 10).
  void Varint(uint64_t value, std::string* out) {
    int padding = Below(8) == 0 ? static_cast<int>(Below(4)) : 0;
    while (value >= 0x80 || padding > 0) {
      out->push_back(static_cast<char>((value & 0x7f) | 0x80));
      value >>= 7;
      if (value < 0x80 && padding > 0) --padding;
      if (value == 0 && padding == 0) break;
    }
    out->push_back(static_cast<char>(value));
  }
  void Key(uint32_t field, uint32_t wire_type, std::string* out) {
    Varint((uint64_t{field} << 3) | wire_type, out);
  }
  void Fixed(uint64_t value, int bytes, std::string* out) {
    for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>(value >> (8 * i)));
  }
  void Bytes(const std::string& bytes, std::string* out) {
    Varint(bytes.size(), out);
    out->append(bytes);
  }
  std::string Text() {
    static const std::vector<std::string> kTexts = {"",
                                                    "loss",
                                                    "batch_loss",
                                                    "accuracy",
                                                    "samples_per_second",
                                                    "épocas",
                                                    "損失",
                                                    "\xf0\x9f\x93\x88",  // a four-byte character
                                                    "\xc3",              // a cut two-byte character
                                                    "\xed\xa0\x80",      // a surrogate
                                                    "\xc0\xaf",          // an overlong form
                                                    "\xf4\x90\x80\x80",  // past U+10FFFF
                                                    "ok\xff"};
    return kTexts[Below(static_cast<uint32_t>(kTexts.size()))];
  }
  std::string Value() {
    std::string out;
    const int fields = Below(4);
    for (int i = 0; i < fields; ++i) {
      switch (Below(4)) {
        case 0:
          Key(1, 2, &out);
          Bytes(Text(), &out);
          break;
        case 1:
        case 2:
          Key(2, 5, &out);
          Fixed(random_(), 4, &out);
          break;
        default:
          Unknown(1, &out);
      }
    }
    return out;
  }
  std::string Summary() {
    std::string out;
    const int values = Below(4);
    for (int i = 0; i < values; ++i) {
      if (Below(6) == 0) {
        Unknown(1, &out);
      } else {
        Key(1, 2, &out);
        Bytes(Value(), &out);
      }
    }
    return out;
  }
  std::string SessionLog() {
    std::string out;
    const int fields = Below(4);
    for (int i = 0; i < fields; ++i) {
      switch (Below(4)) {
        case 0:
        case 1:
          Key(1, 0, &out);
          Varint(Below(6) == 0 ? random_() * uint64_t{0x100000001} : Below(4), &out);
          break;
        case 2:
          Key(2 + Below(2), 2, &out);
          Bytes(Text(), &out);
          break;
        default:
          Unknown(1, &out);
      }
    }
    return out;
  }
  // A field the reader does not know: another number, or a known number with another wire type;
  // groups hold further unknown fields, `depth` levels deep at most.
  void Unknown(int depth, std::string* out) {
    const uint32_t field = Below(3) == 0 ? 1 + Below(7) : 8 + Below(3000);
    const uint32_t wire_type = depth > 0 ? std::vector<uint32_t>{0, 1, 2, 3, 5}[Below(5)]
                                         : std::vector<uint32_t>{0, 1, 2, 5}[Below(4)];
    Key(field, wire_type, out);
    switch (wire_type) {
      case 0:
        Varint(random_(), out);
        break;
      case 1:
        Fixed(random_(), 8, out);
        break;
      case 2:
        Bytes(Text(), out);
        break;
      case 3:
        for (uint32_t i = Below(3); i > 0; --i) Unknown(depth - 1, out);
        Key(field, 4, out);
        break;
      default:
        Fixed(random_(), 4, out);
    }
  }

  std::mt19937 random_;
};

void ExpectSameReading(const std::string& record) {
  const Reading expected = WithProtobuf(record);
  const Reading actual = WithScalarEvent(record);
  ASSERT_EQ(actual, expected) << "record " << Hex(record) << "\nprotobuf: " << Describe(expected)
                              << "\nParseScalarEvent: " << Describe(actual);
}

TEST(ScalarEventTest, ReadsWhatTheGeneratedClassesWrite) {
  proto::Event event;
  event.set_wall_time(1700000000.25);
  event.set_step(1234567);
  proto::Summary::Value* loss = event.mutable_summary()->add_value();
  loss->set_tag("batch_loss");
  loss->set_simple_value(0.5f);
  event.mutable_summary()->add_value()->set_tag("no simple value");
  event.mutable_summary()->add_value()->set_simple_value(2.0f);  // no tag: an empty one
  const std::string record = event.SerializeAsString();
  ScalarEvent parsed;
  ASSERT_TRUE(ParseScalarEvent(record, &parsed));
  EXPECT_EQ(parsed.step, 1234567);
  EXPECT_EQ(parsed.wall_time, 1700000000.25);
  EXPECT_FALSE(parsed.session_start);
  ASSERT_EQ(parsed.scalars.size(), 2u);
  EXPECT_EQ(parsed.scalars[0].tag, "batch_loss");
  EXPECT_EQ(parsed.scalars[0].value, 0.5f);
  EXPECT_EQ(parsed.scalars[1].tag, "");
  EXPECT_EQ(parsed.scalars[1].value, 2.0f);
  ExpectSameReading(record);

  proto::Event start;
  start.set_step(-3);  // ten bytes on the wire
  start.mutable_session_log()->set_status(proto::SessionLog::START);
  ASSERT_TRUE(ParseScalarEvent(start.SerializeAsString(), &parsed));
  EXPECT_TRUE(parsed.session_start);
  EXPECT_EQ(parsed.step, -3);
  EXPECT_TRUE(parsed.scalars.empty());
  ExpectSameReading(start.SerializeAsString());

  proto::Event version;
  version.set_file_version("brain.Event:2");
  ASSERT_TRUE(ParseScalarEvent(version.SerializeAsString(), &parsed));
  EXPECT_FALSE(parsed.session_start);
  EXPECT_TRUE(parsed.scalars.empty());
}

TEST(ScalarEventTest, RefusesWhatProtobufRefuses) {
  ScalarEvent parsed;
  EXPECT_TRUE(ParseScalarEvent("", &parsed));                           // every field default
  EXPECT_FALSE(ParseScalarEvent(std::string("\x10", 1), &parsed));      // step without a value
  EXPECT_FALSE(ParseScalarEvent(std::string("\x00\x00", 2), &parsed));  // field number 0
  EXPECT_FALSE(ParseScalarEvent("\x2a\x05\x0a\x03", &parsed));          // summary past the end
  EXPECT_FALSE(ParseScalarEvent("\x0c", &parsed));                      // an end-group marker
  EXPECT_FALSE(ParseScalarEvent("\x0e", &parsed));                      // wire type 6
  // A group nested deeper than kMaxNesting.
  std::string deep;
  for (int i = 0; i <= kMaxNesting; ++i) deep += "\x43";  // field 8, start group
  for (int i = 0; i <= kMaxNesting; ++i) deep += "\x44";
  EXPECT_FALSE(ParseScalarEvent(deep, &parsed));
  ExpectSameReading(deep);
  deep = deep.substr(1, deep.size() - 2);  // one level less
  EXPECT_TRUE(ParseScalarEvent(deep, &parsed));
  ExpectSameReading(deep);
}

TEST(ScalarEventTest, AgreesWithProtobufOnGeneratedAndMutatedRecords) {
  google::protobuf::LogSilencer silence;  // protobuf logs each string that is no UTF-8
  WireWriter writer(18);
  int valid = 0, with_scalars = 0, starts = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string record = writer.Event();
    ExpectSameReading(record);
    const Reading reading = WithProtobuf(record);
    valid += reading.valid;
    with_scalars += !reading.scalars.empty();
    starts += reading.session_start;
    for (int m = 0; m < 4; ++m) {
      record = writer.Mutate(record);
      ExpectSameReading(record);
    }
    if (HasFatalFailure()) return;
  }
  // The generator reaches every kind of record.
  EXPECT_GT(valid, 2000);
  EXPECT_GT(with_scalars, 1000);
  EXPECT_GT(starts, 100);
}

}  // namespace
}  // namespace cohort::train
