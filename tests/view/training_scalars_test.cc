// The training curves of a job, read from event files written here record by record: every
// replica and run found, files read as they grow, torn, corrupt, huge and garbage input, a resumed
// run's SessionLog START, downsampling, and the bounds on what is listed.
#include "view/training_scalars.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>

#include "testing/files.h"
#include "testing/scratch_directory.h"
#include "train/summary/crc32c.h"
#include "train/summary/event.pb.h"
#include "train/summary/event_file_writer.h"
#include "train/summary/tfrecord.h"

namespace cohort::view {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

std::string Record(const train::proto::Event& event) {
  std::string bytes;
  event.SerializeToString(&bytes);
  std::string framed;
  train::AppendTfRecord(bytes, &framed);
  return framed;
}

std::string VersionRecord() {
  train::proto::Event event;
  event.set_wall_time(1000);
  event.set_file_version("brain.Event:2");
  return Record(event);
}

std::string ScalarRecord(int64_t step, const std::string& tag, float value) {
  train::proto::Event event;
  event.set_wall_time(1000 + static_cast<double>(step));
  event.set_step(step);
  auto* entry = event.mutable_summary()->add_value();
  entry->set_tag(tag);
  entry->set_simple_value(value);
  return Record(event);
}

std::string StartRecord(int64_t step) {
  train::proto::Event event;
  event.set_step(step);
  event.mutable_session_log()->set_status(train::proto::SessionLog::START);
  return Record(event);
}

void Append(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << bytes;
}

// A query; designated initializers would leave the other fields to -Wextra's complaint.
ScalarQuery Query(std::string replica, std::string run = "", std::string tag = "") {
  ScalarQuery query;
  query.replica = std::move(replica);
  query.run = std::move(run);
  query.tag = std::move(tag);
  return query;
}

ScalarQuery WithTag(std::string tag) { return Query("", "", std::move(tag)); }

ScalarQuery AfterStep(int64_t step) {
  ScalarQuery query;
  query.after_step = step;
  return query;
}

ScalarQuery AtMost(size_t max_points) {
  ScalarQuery query;
  query.max_points = max_points;
  return query;
}

ScalarQuery LatestOnly() {
  ScalarQuery query;
  query.latest_only = true;
  return query;
}

std::vector<int64_t> Steps(const ScalarSeries& series) {
  std::vector<int64_t> steps;
  for (const ScalarPoint& point : series.points) steps.push_back(point.step);
  return steps;
}

class TrainingScalarsTest : public ::testing::Test {
 protected:
  fs::path EventFile(const std::string& replica, const std::string& run,
                     const std::string& stamp = "1700000000") {
    return summaries_ / replica / run / ("events.out.tfevents." + stamp + ".host.1.0");
  }

  std::vector<ScalarSeries> Read(ScalarQuery query = {}) {
    notes_.clear();
    StatusOr<std::vector<ScalarSeries>> series = ReadScalarsIn(summaries_, query, &cache_, &notes_);
    EXPECT_TRUE(series.ok()) << series.status().ToString();
    return series.ok() ? *series : std::vector<ScalarSeries>();
  }

  testing::ScratchDirectory scratch_{"cohort-scalars-test"};
  const fs::path summaries_ = scratch_.path() / "summaries";
  ScalarCache cache_;
  std::vector<std::string> notes_;
};

TEST_F(TrainingScalarsTest, FindsEveryReplicaAndRunAndFilters) {
  Append(EventFile("worker-0", "train"), VersionRecord() + ScalarRecord(1, "batch_loss", 2.5f) +
                                             ScalarRecord(2, "batch_loss", 2.0f));
  Append(EventFile("worker-0", "validation"),
         VersionRecord() + ScalarRecord(2, "epoch_loss", 1.5f));
  Append(EventFile("evaluator-0", "eval"), VersionRecord() + ScalarRecord(7, "auc", 0.9f));
  fs::create_directories(summaries_ / "worker-1" / "train");  // no files yet: no series

  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].replica, "evaluator-0");
  EXPECT_EQ(all[0].run, "eval");
  EXPECT_EQ(all[0].tag, "auc");
  EXPECT_EQ(all[1].replica, "worker-0");
  EXPECT_EQ(all[1].run, "train");
  EXPECT_THAT(Steps(all[1]), ElementsAre(1, 2));
  EXPECT_DOUBLE_EQ(all[1].points[1].value, 2.0);
  EXPECT_DOUBLE_EQ(all[1].points[1].wall_time, 1002);
  EXPECT_EQ(all[2].run, "validation");
  EXPECT_THAT(notes_, IsEmpty());

  EXPECT_EQ(Read(WithTag("epoch_loss")).size(), 1u);
  EXPECT_EQ(Read(Query("worker-0")).size(), 2u);
  EXPECT_EQ(Read(Query("worker-0", "train")).size(), 1u);
  EXPECT_THAT(Read(WithTag("nothing")), IsEmpty());
}

TEST_F(TrainingScalarsTest, ReadsWhatWasAppendedAndAfterAStep) {
  const fs::path file = EventFile("worker-0", "train");
  Append(file, VersionRecord() + ScalarRecord(1, "batch_loss", 3));
  ASSERT_EQ(Read().size(), 1u);
  Append(file, ScalarRecord(2, "batch_loss", 2) + ScalarRecord(3, "batch_loss", 1));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1, 2, 3));
  EXPECT_EQ(cache_.cached_files(), 1u);

  std::vector<ScalarSeries> newer = Read(AfterStep(1));
  ASSERT_EQ(newer.size(), 1u);
  EXPECT_THAT(Steps(newer[0]), ElementsAre(2, 3));
  EXPECT_EQ(newer[0].total_points, 3u);
  EXPECT_THAT(Read(AfterStep(3)), IsEmpty());

  std::vector<ScalarSeries> latest = Read(LatestOnly());
  ASSERT_EQ(latest.size(), 1u);
  EXPECT_THAT(Steps(latest[0]), ElementsAre(3));
}

TEST_F(TrainingScalarsTest, ATornLastRecordWaitsUntilItIsWhole) {
  const fs::path file = EventFile("worker-0", "train");
  const std::string next = ScalarRecord(2, "batch_loss", 2);
  Append(file, VersionRecord() + ScalarRecord(1, "batch_loss", 3) + next.substr(0, 5));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1));
  EXPECT_THAT(notes_, IsEmpty());
  Append(file, next.substr(5, 14));  // past the header, inside the data
  EXPECT_THAT(Steps(Read()[0]), ElementsAre(1));
  EXPECT_THAT(notes_, IsEmpty());
  Append(file, next.substr(19));
  EXPECT_THAT(Steps(Read()[0]), ElementsAre(1, 2));
}

TEST_F(TrainingScalarsTest, ACrcMismatchKeepsWhatCameBeforeAndSaysWhere) {
  const fs::path file = EventFile("worker-0", "train");
  const std::string head = VersionRecord() + ScalarRecord(1, "batch_loss", 3);
  std::string bad = ScalarRecord(2, "batch_loss", 2);
  bad[14] ^= 0x20;  // a byte of the data
  Append(file, head + bad + ScalarRecord(3, "batch_loss", 1));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_THAT(notes_[0], HasSubstr(file.string() + ": record at byte " +
                                   std::to_string(head.size()) + ": data CRC mismatch"));
}

TEST_F(TrainingScalarsTest, AHugeLengthIsRefusedBeforeAnythingIsRead) {
  const fs::path file = EventFile("worker-0", "train");
  std::string header(8, '\0');
  const uint64_t length = uint64_t{1} << 40;
  for (int i = 0; i < 8; ++i) header[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  const uint32_t crc = train::crc32c::Mask(train::crc32c::Value(header));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
  Append(file, VersionRecord() + ScalarRecord(1, "batch_loss", 3) + header);
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_THAT(notes_[0], HasSubstr("1099511627776 bytes announced, more than the limit"));
}

TEST_F(TrainingScalarsTest, AGarbageFileIsNotedAndTheOthersAreRead) {
  Append(EventFile("worker-0", "train", "1700000000"), std::string(4096, 'x'));
  Append(EventFile("worker-0", "train", "1700000001"),
         VersionRecord() + ScalarRecord(5, "batch_loss", 1));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(5));
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_THAT(notes_[0], HasSubstr("record at byte 0: length CRC mismatch"));
}

TEST_F(TrainingScalarsTest, AFileOverTheSizeLimitIsSkippedWithANote) {
  train::EventFileLimits limits;
  limits.max_file_bytes = 64;
  ScalarCache small(limits);
  std::string records = VersionRecord();
  for (int step = 1; step <= 10; ++step) records += ScalarRecord(step, "batch_loss", 1);
  Append(EventFile("worker-0", "train"), records);
  std::vector<std::string> notes;
  StatusOr<std::vector<ScalarSeries>> all = ReadScalarsIn(summaries_, {}, &small, &notes);
  ASSERT_TRUE(all.ok());
  EXPECT_THAT(*all, IsEmpty());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_THAT(notes[0], HasSubstr("more than the limit of 64 for an event file"));
}

TEST_F(TrainingScalarsTest, ALaterFilesSessionStartHidesTheLostSteps) {
  std::string first = VersionRecord();
  for (int step = 1; step <= 10; ++step) first += ScalarRecord(step, "batch_loss", 1);
  Append(EventFile("worker-0", "train", "1700000000"), first);
  Append(EventFile("worker-0", "train", "1700000100"), VersionRecord() + StartRecord(6) +
                                                           ScalarRecord(6, "batch_loss", 2) +
                                                           ScalarRecord(7, "batch_loss", 2));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1, 2, 3, 4, 5, 6, 7));
  EXPECT_DOUBLE_EQ(all[0].points[5].value, 2);
}

TEST_F(TrainingScalarsTest, ASessionStartInTheSameFileDropsItsEarlierSteps) {
  Append(EventFile("worker-0", "train"), VersionRecord() + ScalarRecord(1, "batch_loss", 1) +
                                             ScalarRecord(2, "batch_loss", 1) + StartRecord(2) +
                                             ScalarRecord(2, "batch_loss", 5));
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_THAT(Steps(all[0]), ElementsAre(1, 2));
  EXPECT_DOUBLE_EQ(all[0].points[1].value, 5);
}

TEST_F(TrainingScalarsTest, ALinkedRunIsRead) {
  const fs::path elsewhere = scratch_.path() / "user-tensorboard" / "train";
  Append(elsewhere / "events.out.tfevents.1700000000.host.1.0",
         VersionRecord() + ScalarRecord(4, "epoch_loss", 1));
  fs::create_directories(summaries_ / "worker-0");
  fs::create_directory_symlink(elsewhere, summaries_ / "worker-0" / "train");
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].run, "train");
  EXPECT_THAT(Steps(all[0]), ElementsAre(4));
}

// The contract of cluster/summary_location.h, writer to reader: a run written elsewhere is linked
// into the task's COHORT_SUMMARY_DIR and found there; one written in it needs no link.
TEST_F(TrainingScalarsTest, AWriterLinksARunWrittenElsewhere) {
  const fs::path own = summaries_ / "chief-0";
  ASSERT_EQ(setenv("COHORT_SUMMARY_DIR", own.c_str(), 1), 0);
  auto elsewhere = train::EventFileWriter::Create((scratch_.path() / "user" / "train").string());
  auto inside = train::EventFileWriter::Create((own / "eval").string());
  unsetenv("COHORT_SUMMARY_DIR");
  ASSERT_TRUE(elsewhere.ok() && inside.ok());
  ASSERT_TRUE((*elsewhere)->WriteScalars(3, {{"batch_loss", 0.5f}}).ok());
  ASSERT_TRUE((*elsewhere)->Flush().ok());
  ASSERT_TRUE((*inside)->WriteScalars(3, {{"auc", 0.75f}}).ok());
  ASSERT_TRUE((*inside)->Flush().ok());
  EXPECT_TRUE(fs::is_symlink(own / "train"));
  EXPECT_EQ(fs::read_symlink(own / "train"), scratch_.path() / "user" / "train");
  EXPECT_FALSE(fs::is_symlink(own / "eval"));

  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].run, "eval");
  EXPECT_EQ(all[1].run, "train");
  EXPECT_EQ(all[1].tag, "batch_loss");
  EXPECT_THAT(Steps(all[1]), ElementsAre(3));
}

// A run in a bucket is named by <run>.url (train/summary/summary_run_writer.h); one whose URL is
// malformed is a note naming the file, and the replica's other runs are read.
TEST_F(TrainingScalarsTest, ARunUrlFileWithAMalformedUrlIsNotedAndTheOthersAreRead) {
  Append(EventFile("worker-0", "validation"), VersionRecord() + ScalarRecord(2, "epoch_loss", 1));
  Append(summaries_ / "worker-0" / "train.url", "s3://Bad_Bucket/logs/train\n");
  std::vector<ScalarSeries> all = Read();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].run, "validation");
  ASSERT_EQ(notes_.size(), 1u);
  EXPECT_NE(notes_[0].find((summaries_ / "worker-0" / "train.url").string() +
                           " names no run in a bucket"),
            std::string::npos)
      << notes_[0];
  EXPECT_NE(notes_[0].find("Bad_Bucket"), std::string::npos) << notes_[0];
}

TEST_F(TrainingScalarsTest, LongSeriesAreDownsampledKeepingEndsAndExtremes) {
  std::string records = VersionRecord();
  for (int step = 1; step <= 10000; ++step) {
    records += ScalarRecord(step, "batch_loss", step == 5000 ? 100.0f : 1.0f);
  }
  Append(EventFile("worker-0", "train"), records);
  std::vector<ScalarSeries> all = Read(AtMost(100));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_LE(all[0].points.size(), 100u);
  EXPECT_EQ(all[0].total_points, 10000u);
  EXPECT_EQ(all[0].points.front().step, 1);
  EXPECT_EQ(all[0].points.back().step, 10000);
  bool spike = false;
  for (const ScalarPoint& point : all[0].points) spike = spike || point.value == 100.0;
  EXPECT_TRUE(spike);
  EXPECT_EQ(Read(AtMost(0))[0].points.size(), 10000u);
}

TEST_F(TrainingScalarsTest, DownsampleKeepsOrderAndBound) {
  std::vector<ScalarPoint> points;
  for (int i = 0; i < 1000; ++i) points.push_back({i, 0, static_cast<double>((i * 37) % 101)});
  for (size_t bound : {1u, 2u, 3u, 4u, 5u, 10u, 999u}) {
    std::vector<ScalarPoint> kept = Downsample(points, bound);
    EXPECT_LE(kept.size(), bound);
    EXPECT_EQ(kept.back().step, 999);
    for (size_t i = 1; i < kept.size(); ++i) EXPECT_LT(kept[i - 1].step, kept[i].step);
  }
  EXPECT_EQ(Downsample(points, 1000).size(), 1000u);
}

TEST_F(TrainingScalarsTest, ADirectoryOfThousandsOfFilesIsListedWithinABound) {
  const fs::path run = summaries_ / "worker-0" / "train";
  fs::create_directories(run);
  for (size_t i = 0; i < kMaxDirectoryEntries + 500; ++i) {
    std::ofstream(run / ("events.out.tfevents.17" + std::to_string(1000000 + i) + ".h.1.0"));
  }
  std::vector<ScalarSeries> all = Read();
  EXPECT_THAT(all, IsEmpty());
  ASSERT_EQ(notes_.size(), 2u);
  EXPECT_THAT(notes_[0], HasSubstr("holds more than 4096 entries"));
  EXPECT_THAT(notes_[1], HasSubstr("only the newest 64 are read"));
  EXPECT_LE(cache_.cached_files(), kMaxFilesPerRun);
}

TEST_F(TrainingScalarsTest, TheCacheStaysWithinItsByteBudgetAndRereadsWhatItDropped) {
  // Eight replicas of 10,000 points each (about 240 KiB of points apiece, more with the vectors'
  // spare capacity) and a cache of 1 MiB: reading them all, twice, keeps at most 1 MiB between
  // reads, and a replica whose file was dropped reads back whole.
  constexpr int kReplicas = 8;
  constexpr int kPoints = 10000;
  constexpr size_t kBudget = size_t{1} << 20;
  for (int replica = 0; replica < kReplicas; ++replica) {
    std::string records = VersionRecord();
    for (int step = 0; step < kPoints; ++step) {
      records += ScalarRecord(step, "batch_loss", static_cast<float>(replica));
    }
    Append(EventFile("worker-" + std::to_string(replica), "train"), records);
  }
  ScalarCache cache({}, kBudget);
  EXPECT_EQ(cache.max_bytes(), kBudget);
  size_t most_held = 0;
  for (int round = 0; round < 2; ++round) {
    for (int replica = 0; replica < kReplicas; ++replica) {
      std::vector<std::string> notes;
      StatusOr<std::vector<ScalarSeries>> series =
          ReadScalarsIn(summaries_, Query("worker-" + std::to_string(replica)), &cache, &notes);
      ASSERT_TRUE(series.ok()) << series.status().ToString();
      ASSERT_EQ(series->size(), 1u);
      EXPECT_EQ((*series)[0].total_points, static_cast<size_t>(kPoints));
      EXPECT_DOUBLE_EQ((*series)[0].points.back().value, replica);
      EXPECT_THAT(notes, IsEmpty());
      const size_t held = cache.held_bytes();
      // What is held is counted: at least the points of the files kept.
      EXPECT_GE(held, cache.cached_files() * kPoints * sizeof(ScalarPoint));
      EXPECT_LE(held, kBudget) << "after reading worker-" << replica;
      most_held = std::max(most_held, held);
    }
  }
  EXPECT_GT(most_held, 0u);
  EXPECT_LT(cache.cached_files(), static_cast<size_t>(kReplicas));  // some were dropped
  // All of them at once: the runs are merged one after another, each run's files dropped as
  // needed after it, so the cache ends within its budget too.
  StatusOr<std::vector<ScalarSeries>> all = ReadScalarsIn(summaries_, {}, &cache);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kReplicas));
  EXPECT_LE(cache.held_bytes(), kBudget);
}

TEST_F(TrainingScalarsTest, AMissingDirectoryHoldsNoScalars) {
  EXPECT_THAT(Read(), IsEmpty());
  EXPECT_THAT(notes_, IsEmpty());
}

}  // namespace
}  // namespace cohort::view
