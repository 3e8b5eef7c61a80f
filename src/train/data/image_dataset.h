// ImageDataset: labelled greyscale images in memory, and loading the MNIST-format splits.
//
// The default data set is Fashion-MNIST as Debian's dataset-fashion-mnist package installs it. The
// same layout is MNIST's, so either works as --data_dir:
//   <dir>/train-images-idx3-ubyte[.gz]  <dir>/train-labels-idx1-ubyte[.gz]   (60000 samples)
//   <dir>/t10k-images-idx3-ubyte[.gz]   <dir>/t10k-labels-idx1-ubyte[.gz]    (10000 samples)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace cohort::train {

inline constexpr char kDefaultDataDir[] = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST's class names, by label.
const std::vector<std::string>& FashionMnistClassNames();

// Names for the classes of a data set read from `data_dir`: Fashion-MNIST's names when the
// directory's name says it is Fashion-MNIST and there are 10 classes, else the labels as numbers
// ("0".."9" for MNIST digits).
std::vector<std::string> ClassNamesFor(const std::string& data_dir, int num_classes);

struct ImageDataset {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // size() * rows * cols bytes, image after image
  std::vector<uint8_t> labels;  // one class index per image
  int num_classes = 0;          // 1 + the largest label

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t image_bytes() const { return rows * cols; }
};

enum class Split { kTrain, kTest };

// Loads one split from `dir`, preferring the .gz file when both forms exist. Errors name the
// directory or file: a missing directory, a missing file, a damaged file (idx_file.h), images
// and labels that disagree in count, or images that are not 2-D.
StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Split split);

}  // namespace cohort::train
