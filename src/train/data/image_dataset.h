// ImageDataset: labelled greyscale images in memory, and loading the MNIST-format splits.
//
// The default data set is Fashion-MNIST as Debian's dataset-fashion-mnist package installs it. The
// same layout is MNIST's, so either works as --data_dir:
//   <dir>/train-images-idx3-ubyte[.gz]  <dir>/train-labels-idx1-ubyte[.gz]   (60000 samples)
//   <dir>/t10k-images-idx3-ubyte[.gz]   <dir>/t10k-labels-idx1-ubyte[.gz]    (10000 samples)
//
// Labels are checked when the data is loaded, so that a bad one is reported with its file and
// index before any training, not as "Target 250 is out of bounds" after an epoch:
//  - a data set whose class names are known fixes the class count (Fashion-MNIST, recognised by
//    its directory's name as ClassNamesFor does: 10), and every label of either split must be
//    below it;
//  - otherwise the training split defines the classes: 1 + its largest label, with every class
//    from 0 up to it present at least once (a class the model never sees means damaged or
//    mislabelled data: labels all 200 would otherwise train a 201-class model); the test split's
//    labels must be below that count (CheckLabels).
// An error names the labels file, the index of the first bad label and the label.
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

// The class count that the class names of the data set in `data_dir` fix: 10 for Fashion-MNIST,
// 0 when the names are not known.
int KnownClassCount(const std::string& data_dir);

struct ImageDataset {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<uint8_t> pixels;  // size() * rows * cols bytes, image after image
  std::vector<uint8_t> labels;  // one class index per image
  int num_classes = 0;          // KnownClassCount, else 1 + the largest label
  std::string labels_path;      // the file the labels were read from, for messages

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  int64_t image_bytes() const { return rows * cols; }
};

enum class Split { kTrain, kTest };

// Loads one split from `dir`, preferring the .gz file when both forms exist. Errors name the
// directory or file: a missing directory, a missing file, a damaged file (idx_file.h), images
// and labels that disagree in count, images that are not 2-D, or labels that break the rules
// above (a training split with a class missing is checked only when the class count is not
// known).
StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Split split);

// OK when every label of `dataset` is below `num_classes` (the training split's, or a saved
// model's); else InvalidArgument "<labels file>: label 250 at index 17 is not one of the 10
// classes (0-9) ...".
Status CheckLabels(const ImageDataset& dataset, int num_classes);

}  // namespace cohort::train
