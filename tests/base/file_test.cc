// The one file layer: atomic replacement, the bounded whole-file reader, errno messages.
#include "base/file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "testing/host.h"
#include "testing/small_file_system.h"

namespace cohort {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class ScratchDirectory {
 public:
  ScratchDirectory() {
    std::string pattern = (fs::temp_directory_path() / "cohort-file-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~ScratchDirectory() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

fs::path TemporaryPathFor(const fs::path& path) {
  return path.parent_path() / ("." + path.filename().string() + ".tmp" + std::to_string(getpid()));
}

int FilesIn(const fs::path& directory) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(directory)) {
    (void)entry;
    ++files;
  }
  return files;
}

TEST(WriteFileAtomicallyTest, ReplacesTheWholeContents) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "status.json";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(10000, 'x')).ok());
  ASSERT_TRUE(WriteFileAtomically(path, "short\n").ok());
  StatusOr<std::string> contents = ReadWholeFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "short\n");          // nothing of the longer old file is left
  EXPECT_EQ(FilesIn(directory.path()), 1);  // no temporary file stays behind
}

TEST(WriteFileAtomicallyTest, AFailedWriteLeavesTheOldFile) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "status.json";
  ASSERT_TRUE(WriteFileAtomically(path, "old\n").ok());
  // The temporary file cannot be created where a directory of that name stands.
  const fs::path temporary = TemporaryPathFor(path);
  fs::create_directory(temporary);
  Status status = WriteFileAtomically(path, "new\n");
  EXPECT_EQ(status.code(), Status::Code::kIOError) << status.ToString();
  EXPECT_THAT(status.message(), HasSubstr(temporary.string()));
  EXPECT_EQ(*ReadWholeFile(path), "old\n");
}

// A secret is created with its final permissions, even where a killed writer left a temporary
// file of the same name with wider ones.
TEST(WriteFileAtomicallyTest, CreatesTheFileWithTheGivenPermissions) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "secret";
  const fs::path temporary = TemporaryPathFor(path);
  std::ofstream(temporary) << "left behind";
  chmod(temporary.c_str(), 0644);
  ASSERT_TRUE(WriteFileAtomically(path, "s3cret", 0600).ok());
  struct stat info {};
  ASSERT_EQ(stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 0777, 0600u);
  EXPECT_EQ(*ReadWholeFile(path), "s3cret");
}

TEST(WriteFileAtomicallyTest, AMissingDirectoryIsNamed) {
  ScratchDirectory directory;
  Status status = WriteFileAtomically(directory.path() / "absent" / "file", "x");
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_THAT(status.message(), HasSubstr("absent"));
  EXPECT_THAT(status.message(), HasSubstr("No such file or directory"));
}

// A full file system is an ordinary error: it names the file and says what the kernel said, the
// old file stays whole, and nothing partial is left beside it.
TEST(WriteFileAtomicallyTest, AFullDiskIsAnErrorNamingTheFileAndLeavesTheOldOne) {
  cohort::testing::SmallFileSystem disk(64 * 1024);
  if (!disk.mounted()) COHORT_SKIP_OR_FAIL_IN_CI(disk.why_not());
  const fs::path path = disk.path() / "ckpt-1.pt";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(16 * 1024, 'a')).ok());
  Status status = WriteFileAtomically(path, std::string(128 * 1024, 'b'));
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_THAT(status.message(), HasSubstr(TemporaryPathFor(path).string()));
  EXPECT_THAT(status.message(), HasSubstr("No space left on device"));
  EXPECT_EQ(*ReadWholeFile(path), std::string(16 * 1024, 'a'));
  EXPECT_EQ(FilesIn(disk.path()), 1);
}

TEST(RemoveStaleTemporaryFilesTest, RemovesDeadWritersFilesAndKeepsLiveOnes) {
  ScratchDirectory directory;
  // A pid no process has: above the kernel's pid_max limit (4194304).
  const fs::path dead = directory.path() / ".weights.pt.tmp9999999";
  const fs::path own = TemporaryPathFor(directory.path() / "checkpoint");
  const fs::path live = directory.path() / (".manifest.json.tmp" + std::to_string(getppid()));
  for (const fs::path& file : {dead, own, live}) std::ofstream(file) << "partial";
  for (const char* name : {"weights.pt", ".hidden", ".x.tmp", "notes.tmp12"}) {
    std::ofstream(directory.path() / name) << "kept";
  }
  StatusOr<int> removed = RemoveStaleTemporaryFiles(directory.path());
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(*removed, 2);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_FALSE(fs::exists(own));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_EQ(FilesIn(directory.path()), 5);
  EXPECT_EQ(*RemoveStaleTemporaryFiles(directory.path() / "absent"), 0);
}

TEST(WriteFileInPlaceTest, KeepsTheSameFileAndTruncatesIt) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "termination-log";
  ASSERT_TRUE(WriteFileInPlace(path, std::string(10000, 'x')).ok());
  struct stat before {};
  ASSERT_EQ(stat(path.c_str(), &before), 0);
  ASSERT_TRUE(WriteFileInPlace(path, "peer worker:1 hung").ok());
  struct stat after {};
  ASSERT_EQ(stat(path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);  // written in place, not replaced by a rename
  StatusOr<std::string> contents = ReadWholeFile(path);
  ASSERT_TRUE(contents.ok());
  EXPECT_EQ(*contents, "peer worker:1 hung");
  EXPECT_EQ(FilesIn(directory.path()), 1);
}

TEST(WriteFileInPlaceTest, AMissingDirectoryIsNamed) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "absent" / "termination-log";
  Status written = WriteFileInPlace(path, "x");
  EXPECT_EQ(written.code(), Status::Code::kIOError);
  EXPECT_NE(written.message().find(path.string()), std::string::npos) << written.message();
}

TEST(ReplaceFileAtomicallyTest, AFailingWriterLeavesTheOldFileAndNoTemporary) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "weights.pt";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  Status status = ReplaceFileAtomically(path, [](const fs::path& temporary) {
    std::ofstream(temporary) << "half";
    return Status::IOError("disk full while writing " + temporary.string());
  });
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_EQ(*ReadWholeFile(path), "old");
  EXPECT_EQ(FilesIn(directory.path()), 1);
}

TEST(ReplaceFileAtomicallyTest, AWriterThatCreatesNothingFails) {
  ScratchDirectory directory;
  Status status = ReplaceFileAtomically(directory.path() / "model",
                                        [](const fs::path&) { return Status::OK(); });
  EXPECT_EQ(status.code(), Status::Code::kIOError);
  EXPECT_FALSE(fs::exists(directory.path() / "model"));
}

TEST(ReadWholeFileTest, AMissingFileIsNotFoundAndNamed) {
  ScratchDirectory directory;
  StatusOr<std::string> contents = ReadWholeFile(directory.path() / "nope");
  EXPECT_EQ(contents.status().code(), Status::Code::kNotFound);
  EXPECT_THAT(contents.status().message(), HasSubstr("nope"));
}

TEST(ReadWholeFileTest, ADirectoryIsRefused) {
  ScratchDirectory directory;
  StatusOr<std::string> contents = ReadWholeFile(directory.path());
  EXPECT_EQ(contents.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(contents.status().message(), HasSubstr("is a directory"));
}

TEST(ReadWholeFileTest, AFileOverTheBoundIsRefused) {
  ScratchDirectory directory;
  const fs::path path = directory.path() / "big";
  ASSERT_TRUE(WriteFileAtomically(path, std::string(1000, 'x')).ok());
  EXPECT_TRUE(ReadWholeFile(path, 1000).ok());
  StatusOr<std::string> contents = ReadWholeFile(path, 999);
  EXPECT_EQ(contents.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(contents.status().message(), HasSubstr("more than 999 bytes"));
}

// A device that never ends is read only up to the bound.
TEST(ReadWholeFileTest, AnEndlessStreamStopsAtTheBound) {
  StatusOr<std::string> contents = ReadWholeFile("/dev/zero", 1 << 20);
  EXPECT_EQ(contents.status().code(), Status::Code::kInvalidArgument);
  EXPECT_THAT(contents.status().message(), HasSubstr("/dev/zero"));
}

TEST(ReadWholeDescriptorTest, ReadsAPipeToItsEndWithinTheBound) {
  int ends[2];
  ASSERT_EQ(pipe(ends), 0);
  ASSERT_EQ(write(ends[1], "a: b\n", 5), 5);
  close(ends[1]);
  StatusOr<std::string> contents = ReadWholeDescriptor(ends[0], "<stdin>", 5);
  ASSERT_TRUE(contents.ok()) << contents.status().ToString();
  EXPECT_EQ(*contents, "a: b\n");
  close(ends[0]);

  const int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(zero, 0);
  contents = ReadWholeDescriptor(zero, "<stdin>", 1 << 20);
  close(zero);
  ASSERT_FALSE(contents.ok());
  EXPECT_EQ(contents.status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(contents.status().message(), "<stdin> holds more than 1048576 bytes");
}

TEST(ErrnoMessageTest, SaysWhatTheSystemSays) {
  EXPECT_EQ(ErrnoMessage(ENOENT), "No such file or directory");
  EXPECT_EQ(ErrnoMessage(ENOSPC), "No space left on device");
}

}  // namespace
}  // namespace cohort
