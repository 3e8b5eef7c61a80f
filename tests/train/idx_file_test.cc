#include "train/data/idx_file.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"
#include "train/data/image_dataset.h"

namespace cohort::train {
namespace {

using testing::Gzip;
using testing::IdxBytes;
using testing::WriteFile;

class IdxFileTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  cohort::testing::ScratchDirectory scratch_{"cohort-idx"};
  const std::string dir_ = scratch_.path().string();
};

TEST_F(IdxFileTest, ReadsPlainAndGzipFilesAlike) {
  const std::vector<uint8_t> data = {1, 2, 3, 4, 5, 6};
  const std::string bytes = IdxBytes({2, 3}, data);
  WriteFile(Path("plain"), bytes);
  WriteFile(Path("compressed.gz"), Gzip(bytes));
  for (const std::string name : {"plain", "compressed.gz"}) {
    auto array = ReadIdxFile(Path(name));
    ASSERT_TRUE(array.ok()) << array.status().ToString();
    EXPECT_EQ(array->dims, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(array->data, data);
  }
}

// A small .gz that expands far beyond the bound (a "gzip bomb") is refused, naming the file,
// before it is inflated whole.
TEST_F(IdxFileTest, AGzipThatExpandsBeyondTheBoundIsRefused) {
  const std::vector<uint8_t> zeros(4 << 20, 0);
  const std::string compressed = Gzip(IdxBytes({4, 1024, 1024}, zeros));
  ASSERT_LT(compressed.size(), 64u * 1024);
  WriteFile(Path("bomb-images-idx3-ubyte.gz"), compressed);
  auto array = ReadIdxFile(Path("bomb-images-idx3-ubyte.gz"), 1 << 20);
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(array.status().message().find(Path("bomb-images-idx3-ubyte.gz") +
                                          ": expands to more than 1048576 bytes"),
            std::string::npos)
      << array.status().ToString();
  // Within the bound the same file reads.
  EXPECT_TRUE(ReadIdxFile(Path("bomb-images-idx3-ubyte.gz"), 8 << 20).ok());
}

TEST_F(IdxFileTest, MissingFileIsNamed) {
  auto array = ReadIdxFile(Path("absent"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), Status::Code::kNotFound);
  EXPECT_EQ(array.status().message(), Path("absent") + ": no such file");
}

TEST_F(IdxFileTest, TruncatedDataSaysHowMuchIsMissing) {
  std::string bytes = IdxBytes({2, 3}, {1, 2, 3, 4, 5, 6});
  bytes.resize(bytes.size() - 2);
  WriteFile(Path("short"), bytes);
  auto array = ReadIdxFile(Path("short"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(),
            Path("short") + ": truncated: header says 2x3 = 6 bytes of data, the file has 4");
}

TEST_F(IdxFileTest, TruncatedHeaderAndTrailingBytesAreErrors) {
  WriteFile(Path("header"), std::string("\0\0\x08\x03\0\0", 6));
  auto array = ReadIdxFile(Path("header"));
  ASSERT_FALSE(array.ok());
  EXPECT_NE(array.status().message().find(Path("header") + ": truncated: the header needs 16"),
            std::string::npos)
      << array.status().message();

  WriteFile(Path("long"), IdxBytes({2}, {7, 8}) + "x");
  array = ReadIdxFile(Path("long"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(), Path("long") + ": 1 unexpected bytes after the 2 array");
}

TEST_F(IdxFileTest, TruncatedGzipStreamIsAnError) {
  std::string compressed = Gzip(IdxBytes({100}, std::vector<uint8_t>(100, 9)));
  compressed.resize(compressed.size() / 2);
  WriteFile(Path("cut.gz"), compressed);
  auto array = ReadIdxFile(Path("cut.gz"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(array.status().message().find(Path("cut.gz") + ": truncated gzip stream"),
            std::string::npos)
      << array.status().message();
}

TEST_F(IdxFileTest, BadMagicIsNamed) {
  WriteFile(Path("text"), "hello, world");
  auto array = ReadIdxFile(Path("text"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(array.status().message(),
            Path("text") +
                ": bad magic 0x68 0x65 0x6c 0x6c: neither an IDX file (00 00 type "
                "rank) nor gzip");

  WriteFile(Path("floats"), std::string("\0\0\x0d\x01\0\0\0\0", 8));
  array = ReadIdxFile(Path("floats"));
  ASSERT_FALSE(array.ok());
  EXPECT_EQ(
      array.status().message(),
      Path("floats") + ": IDX element type 0x0d is not supported (only unsigned bytes, 0x08)");
}

TEST_F(IdxFileTest, LoadsASplitAndChecksItsFiles) {
  const ImageDataset original = testing::MakeSyntheticDataset(40, 1, 6);
  testing::WriteDatasetFiles(original, dir_, "train", /*gzip=*/true);
  auto loaded = LoadImageDataset(dir_, Split::kTrain);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->size(), 40);
  EXPECT_EQ(loaded->rows, 6);
  EXPECT_EQ(loaded->pixels, original.pixels);
  EXPECT_EQ(loaded->labels, original.labels);

  auto test = LoadImageDataset(dir_, Split::kTest);
  ASSERT_FALSE(test.ok());
  EXPECT_EQ(test.status().message(), dir_ + "/t10k-images-idx3-ubyte[.gz]: no such file");

  auto missing = LoadImageDataset(dir_ + "/nowhere", Split::kTrain);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("data directory " + dir_ + "/nowhere does not exist"),
            std::string::npos);
}

TEST_F(IdxFileTest, ImagesAndLabelsMustAgreeInCount) {
  WriteFile(Path("train-images-idx3-ubyte"), IdxBytes({2, 1, 1}, {1, 2}));
  WriteFile(Path("train-labels-idx1-ubyte"), IdxBytes({3}, {0, 1, 2}));
  auto loaded = LoadImageDataset(dir_, Split::kTrain);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().message(), Path("train-images-idx3-ubyte") + " has 2 images but " +
                                           Path("train-labels-idx1-ubyte") + " has 3 labels");
}

// Writes a split of one-pixel images with these labels.
void WriteLabelledSplit(const std::string& dir, const std::string& prefix,
                        const std::vector<uint8_t>& labels) {
  const auto count = static_cast<uint32_t>(labels.size());
  WriteFile(dir + "/" + prefix + "-images-idx3-ubyte",
            IdxBytes({count, 1, 1}, std::vector<uint8_t>(labels.size(), 0)));
  WriteFile(dir + "/" + prefix + "-labels-idx1-ubyte", IdxBytes({count}, labels));
}

TEST_F(IdxFileTest, FashionMnistLabelsMustBeBelowItsTenClasses) {
  const std::string dir = dir_ + "/fashion-mnist";
  std::filesystem::create_directories(dir);
  WriteLabelledSplit(dir, "train", {0, 9, 3});
  auto train = LoadImageDataset(dir, Split::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->num_classes, 10);  // fixed by the class names, not by the labels seen

  WriteLabelledSplit(dir, "t10k", {1, 2, 250, 10});
  auto test = LoadImageDataset(dir, Split::kTest);
  ASSERT_FALSE(test.ok());
  EXPECT_EQ(test.status().message(), dir +
                                         "/t10k-labels-idx1-ubyte: label 250 at index 2 is not "
                                         "one of the 10 classes (0-9)");
}

TEST_F(IdxFileTest, LabelsAll200AreRefusedNamingTheFirst) {
  WriteLabelledSplit(dir_, "train", {200, 200, 200});
  auto train = LoadImageDataset(dir_, Split::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().message(),
            Path("train-labels-idx1-ubyte") +
                ": label 200 at index 0 would make 201 classes, but no image has label 0: labels "
                "must number the classes from 0 with none missing");

  WriteLabelledSplit(dir_, "train", {0, 1, 0, 3, 2, 5});
  train = LoadImageDataset(dir_, Split::kTrain);
  ASSERT_FALSE(train.ok());
  EXPECT_EQ(train.status().message(),
            Path("train-labels-idx1-ubyte") +
                ": label 5 at index 5 would make 6 classes, but no image has label 4: labels must "
                "number the classes from 0 with none missing");
}

TEST_F(IdxFileTest, TestLabelsAreCheckedAgainstTheTrainingClasses) {
  WriteLabelledSplit(dir_, "train", {0, 1, 2, 3});
  WriteLabelledSplit(dir_, "t10k", {3, 1, 250, 0});
  auto train = LoadImageDataset(dir_, Split::kTrain);
  ASSERT_TRUE(train.ok()) << train.status().ToString();
  EXPECT_EQ(train->num_classes, 4);
  // A test split alone defines nothing: it may lack classes, and its labels are checked against
  // the training split's.
  auto test = LoadImageDataset(dir_, Split::kTest);
  ASSERT_TRUE(test.ok()) << test.status().ToString();
  Status labels = CheckLabels(*test, train->num_classes);
  EXPECT_EQ(labels.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(labels.message(), Path("t10k-labels-idx1-ubyte") +
                                  ": label 250 at index 2 is not one of the 4 classes (0-3)");
  EXPECT_TRUE(CheckLabels(*train, 4).ok());
}

TEST(ClassNames, FashionNamesOnlyForFashionMnist) {
  EXPECT_EQ(ClassNamesFor("/usr/share/datasets/fashion-mnist/", 10)[9], "Ankle boot");
  EXPECT_EQ(ClassNamesFor("/data/mnist", 10)[9], "9");
  EXPECT_EQ(ClassNamesFor("/data/fashion-mnist", 4).size(), 4u);
  EXPECT_EQ(KnownClassCount("/usr/share/datasets/fashion-mnist/"), 10);
  EXPECT_EQ(KnownClassCount("/data/mnist"), 0);
}

}  // namespace
}  // namespace cohort::train
