// Shared by the serve tests: a small image classifier trained and saved here (synthetic 12x12
// images, 4 classes; tests/train/test_support.h), and a TorchScript file saved by Debian's
// /usr/bin/python3 with its expected outputs (make_torchscript.py).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "train/test_support.h"

namespace cohort::serve::testing {

// Trains the small CNN for a few steps (seed `seed`) and saves it in `dir`.
inline void SaveSmallClassifier(const std::string& dir, uint64_t seed = 5) {
  train::testing::SmallData data;
  train::SingleProcessStrategy strategy;
  train::TrainerOptions options = train::testing::SmallRun();
  options.seed = seed;
  options.epochs = 1;
  auto trainer = train::testing::MakeTrainer(options, data, &strategy);
  ASSERT_NE(trainer, nullptr);
  ::testing::internal::CaptureStdout();
  Status fitted = trainer->Fit({});
  ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(fitted.ok()) << fitted.ToString();
  Status saved = trainer->SaveModel(dir, {{"test_accuracy", 0.5}}, "/data/synthetic");
  ASSERT_TRUE(saved.ok()) << saved.ToString();
}

// The synthetic test images (12x12) as pixels in [0, 1].
inline std::vector<std::vector<float>> SmallTestImages(size_t count) {
  train::testing::SmallData data;
  std::vector<std::vector<float>> images;
  for (size_t i = 0; i < count; ++i) {
    std::vector<float> image(144);
    for (size_t p = 0; p < 144; ++p) image[p] = data.test.pixels[i * 144 + p] / 255.0f;
    images.push_back(std::move(image));
  }
  return images;
}

// An image as the 12x12 nested array a client sends.
inline nlohmann::json ImageJson(const std::vector<float>& image, int64_t cols = 12) {
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < image.size() / cols; ++r) {
    rows.push_back(std::vector<float>(image.begin() + r * cols, image.begin() + (r + 1) * cols));
  }
  return rows;
}

// Saves make_torchscript.py's model at `model` and its expected outputs at `expected`; false
// (with the output in `why`) when python3 or its torch is missing.
inline bool SaveTorchScriptModel(const std::string& model, const std::string& expected,
                                 std::string* why) {
  const std::string script = std::string(COHORT_TEST_DATA_DIR) + "/../serve/make_torchscript.py";
  const std::string command = "/usr/bin/python3 " + script + " " + model + " " + expected + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    *why = "cannot run /usr/bin/python3";
    return false;
  }
  char buffer[4096];
  std::string output;
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    *why =
        "/usr/bin/python3 with torch (Debian's python3-torch) could not save a TorchScript "
        "model: " +
        output;
    return false;
  }
  return true;
}

}  // namespace cohort::serve::testing
