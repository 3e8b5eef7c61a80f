#include "taxi/taxi_dataset.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "taxi/taxi_csv.h"
#include "testing/scratch_directory.h"
#include "testing/synthetic_data.h"

namespace cohort::taxi {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

uint64_t Fnv1a(const std::string& bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (char c : bytes) hash = (hash ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return hash;
}

class TaxiDatasetTest : public ::testing::Test {
 protected:
  std::string Dir(const std::string& name) const { return dir_ + "/" + name; }
  cohort::testing::ScratchDirectory scratch_{"cohort-taxi-dataset"};
  const std::string dir_ = scratch_.path().string();
  const TaxiDatasetOptions small_ = {.seed = 42, .train_trips = 3000, .eval_trips = 2000};
};

TEST_F(TaxiDatasetTest, GroundTruthCeilingIsTheAucOfTheEvalFileAsRead) {
  auto truth = WriteTaxiDataset(Dir("a"), small_);
  ASSERT_TRUE(truth.ok()) << truth.status().ToString();
  auto eval = ReadTaxiCsv(Dir("a") + "/" + kTaxiEvalFile);
  ASSERT_TRUE(eval.ok()) << eval.status().ToString();
  ASSERT_EQ(eval->trips.size(), 2000u);
  // Values are rounded before labels are drawn, so the file gives the very same probabilities.
  auto ceiling = TaxiCeilingAuc(eval->trips);
  ASSERT_TRUE(ceiling.ok());
  EXPECT_EQ(*ceiling, truth->ceiling_auc);
  EXPECT_GT(truth->ceiling_auc, 0.85);
  EXPECT_LT(truth->ceiling_auc, 0.95);
  EXPECT_NEAR(truth->eval_big_tipper_rate, 0.30, 0.04);

  auto read = ReadTaxiGroundTruth(Dir("a"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->ceiling_auc, truth->ceiling_auc);
  EXPECT_EQ(read->seed, 42u);
  EXPECT_EQ(read->train_trips, 3000);
  EXPECT_EQ(read->rule, truth->rule);
  const std::string json = ReadAll(Dir("a") + "/" + kTaxiGroundTruthFile);
  EXPECT_NE(json.find("\"pickup_area_time_effect\""), std::string::npos);
  EXPECT_NE(json.find("\"Taxicab Insurance Agency, LLC\""), std::string::npos);
}

TEST_F(TaxiDatasetTest, SameSeedSameBytesOtherSeedOtherBytes) {
  ASSERT_TRUE(WriteTaxiDataset(Dir("a"), small_).ok());
  ASSERT_TRUE(WriteTaxiDataset(Dir("b"), small_).ok());
  ASSERT_TRUE(
      WriteTaxiDataset(Dir("c"), {.seed = 43, .train_trips = 3000, .eval_trips = 2000}).ok());
  for (const char* file : {kTaxiTrainFile, kTaxiEvalFile, kTaxiGroundTruthFile}) {
    EXPECT_EQ(ReadAll(Dir("a") + "/" + file), ReadAll(Dir("b") + "/" + file)) << file;
    EXPECT_NE(ReadAll(Dir("a") + "/" + file), ReadAll(Dir("c") + "/" + file)) << file;
  }
  // Golden bytes: a change here means seed 42 no longer gives the data set it gave before (on
  // this machine or any other), which must come with a new kTaxiGeneratorVersion.
  EXPECT_EQ(Fnv1a(ReadAll(Dir("a") + "/" + kTaxiTrainFile)), 8779834279325573370u);
  EXPECT_EQ(Fnv1a(ReadAll(Dir("a") + "/" + kTaxiEvalFile)), 14481711729062418159u);
}

TEST_F(TaxiDatasetTest, EnsureGeneratesOnceAndRefusesAnotherDataSet) {
  auto first = EnsureTaxiDataset(Dir("a"), small_);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const auto written = std::filesystem::last_write_time(Dir("a") + "/" + kTaxiTrainFile);
  auto second = EnsureTaxiDataset(Dir("a"), small_);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->ceiling_auc, first->ceiling_auc);
  EXPECT_EQ(std::filesystem::last_write_time(Dir("a") + "/" + kTaxiTrainFile), written);

  auto other = EnsureTaxiDataset(Dir("a"), {.seed = 7, .train_trips = 3000, .eval_trips = 2000});
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), Status::Code::kFailedPrecondition);
  EXPECT_EQ(other.status().message(),
            Dir("a") +
                " holds a taxi data set of generator version 1, seed 42, 3000 train and 2000 eval "
                "trips; asked for generator version 1, seed 7, 3000 train and 2000 eval trips: "
                "use another directory or remove this one");
}

TEST_F(TaxiDatasetTest, ConcurrentEnsuresAgreeAndLeaveNoTemporaryFiles) {
  constexpr int kCallers = 4;
  std::vector<Status> results(kCallers);
  std::vector<double> ceilings(kCallers);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      auto truth = EnsureTaxiDataset(Dir("shared"), small_);
      results[i] = truth.ok() ? Status::OK() : truth.status();
      ceilings[i] = truth.ok() ? truth->ceiling_auc : -1;
    });
  }
  for (std::thread& caller : callers) caller.join();
  for (int i = 0; i < kCallers; ++i) {
    EXPECT_TRUE(results[i].ok()) << results[i].ToString();
    EXPECT_EQ(ceilings[i], ceilings[0]);
  }
  ASSERT_TRUE(WriteTaxiDataset(Dir("reference"), small_).ok());
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(Dir("shared"))) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".taxi-dataset.lock", kTaxiEvalFile,
                                             kTaxiGroundTruthFile, kTaxiTrainFile}));
  for (const char* file : {kTaxiTrainFile, kTaxiEvalFile, kTaxiGroundTruthFile}) {
    EXPECT_EQ(ReadAll(Dir("shared") + "/" + file), ReadAll(Dir("reference") + "/" + file));
  }
}

TEST_F(TaxiDatasetTest, BadGroundTruthFilesAreNamed) {
  auto truth = ReadTaxiGroundTruth(Dir("nothing"));
  ASSERT_FALSE(truth.ok());
  EXPECT_EQ(truth.status().code(), Status::Code::kNotFound);
  std::filesystem::create_directories(Dir("broken"));
  train::testing::WriteFile(Dir("broken") + "/" + kTaxiGroundTruthFile, "{\"seed\": \"x\"}");
  truth = ReadTaxiGroundTruth(Dir("broken"));
  ASSERT_FALSE(truth.ok());
  EXPECT_EQ(truth.status().message(),
            Dir("broken") + "/" + kTaxiGroundTruthFile +
                ": \"generator_version\" is missing or of the wrong type");
}

}  // namespace
}  // namespace cohort::taxi
