#include <gtest/gtest.h>

#include <filesystem>

#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"
#include "train/summary/crc32c.h"
#include "train/summary/event.pb.h"
#include "train/summary/event_file_writer.h"
#include "train/summary/tfrecord.h"

namespace cohort::train {
namespace {

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc32c::Value("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c::Value(""), 0u);
  // 32 zero bytes, from RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(crc32c::Value(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c::Extend(crc32c::Value("1234"), "56789", 5), 0xE3069283u);
}

TEST(Crc32c, MaskRoundTripsAndChangesTheValue) {
  for (uint32_t crc : {0u, 1u, 0xE3069283u, 0xffffffffu}) {
    EXPECT_EQ(crc32c::Unmask(crc32c::Mask(crc)), crc);
    EXPECT_NE(crc32c::Mask(crc), crc);
  }
  // rotate right 15 then add 0xa282ead8.
  EXPECT_EQ(crc32c::Mask(0), 0xa282ead8u);
  EXPECT_EQ(crc32c::Mask(1u << 15), 1u + 0xa282ead8u);
}

TEST(TfRecord, FramingIsLengthCrcDataCrc) {
  std::string framed;
  AppendTfRecord("abc", &framed);
  ASSERT_EQ(framed.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(framed.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  auto little_endian = [&](size_t offset) {
    uint32_t value = 0;
    for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(framed[offset + i]);
    return value;
  };
  EXPECT_EQ(little_endian(8), crc32c::Mask(crc32c::Value(framed.data(), 8)));
  EXPECT_EQ(framed.substr(12, 3), "abc");
  EXPECT_EQ(little_endian(15), crc32c::Mask(crc32c::Value("abc")));
}

TEST(TfRecord, ReaderChecksBothCrcs) {
  const cohort::testing::ScratchDirectory scratch("cohort-tfrecord");
  const std::string dir = scratch.path().string();
  std::string framed;
  AppendTfRecord("first", &framed);
  AppendTfRecord("", &framed);
  testing::WriteFile(dir + "/ok", framed);
  auto records = ReadTfRecordFile(dir + "/ok");
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  EXPECT_EQ(*records, (std::vector<std::string>{"first", ""}));

  std::string corrupt = framed;
  corrupt[13] ^= 1;  // a payload byte of the first record
  testing::WriteFile(dir + "/corrupt", corrupt);
  records = ReadTfRecordFile(dir + "/corrupt");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().message(), dir + "/corrupt: record at byte 0: data CRC mismatch");

  testing::WriteFile(dir + "/torn", framed.substr(0, framed.size() - 3));
  records = ReadTfRecordFile(dir + "/torn");
  ASSERT_FALSE(records.ok());
  EXPECT_NE(records.status().message().find("record at byte 21: truncated"), std::string::npos)
      << records.status().message();
}

TEST(EventFileWriter, WritesWhatTensorBoardReads) {
  const cohort::testing::ScratchDirectory scratch("cohort-events");
  const std::string dir = scratch.path().string();
  std::string path;
  {
    auto writer = EventFileWriter::Create(dir + "/train");
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    path = (*writer)->path();
    ASSERT_TRUE((*writer)->WriteSessionStart(11).ok());
    ASSERT_TRUE(
        (*writer)->WriteScalars(12, {{"epoch_loss", 0.5f}, {"epoch_accuracy", 0.75f}}).ok());
    ASSERT_TRUE((*writer)->Flush().ok());
  }
  EXPECT_NE(std::filesystem::path(path).filename().string().find("events.out.tfevents."),
            std::string::npos);
  auto records = ReadTfRecordFile(path);
  ASSERT_TRUE(records.ok()) << records.status().ToString();
  ASSERT_EQ(records->size(), 3u);

  proto::Event version, start, scalars;
  ASSERT_TRUE(version.ParseFromString((*records)[0]));
  EXPECT_EQ(version.file_version(), "brain.Event:2");
  EXPECT_GT(version.wall_time(), 1.6e9);
  ASSERT_TRUE(start.ParseFromString((*records)[1]));
  EXPECT_EQ(start.step(), 11);
  EXPECT_EQ(start.session_log().status(), proto::SessionLog::START);
  ASSERT_TRUE(scalars.ParseFromString((*records)[2]));
  EXPECT_EQ(scalars.step(), 12);
  ASSERT_EQ(scalars.summary().value_size(), 2);
  EXPECT_EQ(scalars.summary().value(0).tag(), "epoch_loss");
  EXPECT_FLOAT_EQ(scalars.summary().value(0).simple_value(), 0.5f);

  // The wire format TensorBoard expects: field 1 wall_time as a double (key 0x09), field 3
  // file_version as a string (key 0x1a).
  EXPECT_EQ(static_cast<uint8_t>((*records)[0][0]), 0x09);
  EXPECT_EQ(static_cast<uint8_t>((*records)[0][9]), 0x1a);
}

}  // namespace
}  // namespace cohort::train
