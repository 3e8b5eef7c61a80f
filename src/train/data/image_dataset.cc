#include "train/data/image_dataset.h"

#include <algorithm>
#include <filesystem>

#include "base/object_url.h"
#include "base/storage.h"
#include "train/data/idx_file.h"

namespace cohort::train {
namespace {

// Returns "<dir>/<stem>.gz" or "<dir>/<stem>", whichever exists, or a NotFound naming both. The
// directory may be an s3:// or gs:// prefix (base/storage.h).
StatusOr<std::string> FindIdxFile(const std::string& dir, const std::string& stem) {
  const std::string base = JoinStoragePath(dir, stem);
  for (const std::string& candidate : {base + ".gz", base}) {
    if (IsStorageUrl(candidate)) {
      StatusOr<bool> exists = StorageFileExists(candidate);
      if (!exists.ok()) return exists.status();
      if (*exists) return candidate;
      continue;
    }
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  }
  return Status::NotFound(base + "[.gz]: no such file");
}

// The training split of a data set without known class names defines its classes: every one
// from 0 to its largest label must have an image.
Status CheckEveryClassPresent(const ImageDataset& dataset) {
  std::vector<bool> present(static_cast<size_t>(dataset.num_classes), false);
  for (uint8_t label : dataset.labels) present[label] = true;
  const auto missing = std::find(present.begin(), present.end(), false);
  if (missing == present.end()) return Status::OK();
  const int missing_class = static_cast<int>(missing - present.begin());
  // The first label that lies beyond the missing class, which is what makes the count too big.
  size_t index = 0;
  while (dataset.labels[index] <= missing_class) ++index;
  return Status::InvalidArgument(
      dataset.labels_path + ": label " + std::to_string(dataset.labels[index]) + " at index " +
      std::to_string(index) + " would make " + std::to_string(dataset.num_classes) +
      " classes, but no image has label " + std::to_string(missing_class) +
      ": labels must number the classes from 0 with none missing");
}

}  // namespace

const std::vector<std::string>& FashionMnistClassNames() {
  static const std::vector<std::string> kNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};
  return kNames;
}

int KnownClassCount(const std::string& data_dir) {
  std::filesystem::path dir = std::filesystem::path(data_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "…/fashion-mnist/"
  if (dir.filename().string().find("fashion") != std::string::npos) {
    return static_cast<int>(FashionMnistClassNames().size());
  }
  return 0;
}

std::vector<std::string> ClassNamesFor(const std::string& data_dir, int num_classes) {
  if (num_classes == 10 && KnownClassCount(data_dir) == 10) return FashionMnistClassNames();
  std::vector<std::string> names;
  for (int label = 0; label < num_classes; ++label) names.push_back(std::to_string(label));
  return names;
}

StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Split split) {
  std::error_code error;
  if (!IsStorageUrl(dir) && !std::filesystem::is_directory(dir, error)) {
    return Status::NotFound("data directory " + dir +
                            " does not exist (Fashion-MNIST: apt-get install "
                            "dataset-fashion-mnist, which installs " +
                            kDefaultDataDir + ")");
  }
  const std::string prefix = split == Split::kTrain ? "train" : "t10k";
  auto images_path = FindIdxFile(dir, prefix + "-images-idx3-ubyte");
  if (!images_path.ok()) return images_path.status();
  auto labels_path = FindIdxFile(dir, prefix + "-labels-idx1-ubyte");
  if (!labels_path.ok()) return labels_path.status();

  auto images = ReadIdxFile(*images_path);
  if (!images.ok()) return images.status();
  auto labels = ReadIdxFile(*labels_path);
  if (!labels.ok()) return labels.status();

  if (images->dims.size() != 3) {
    return Status::InvalidArgument(*images_path +
                                   ": expected 3 dimensions (count, rows, cols), "
                                   "got " +
                                   std::to_string(images->dims.size()));
  }
  if (labels->dims.size() != 1) {
    return Status::InvalidArgument(*labels_path + ": expected 1 dimension (count), got " +
                                   std::to_string(labels->dims.size()));
  }
  if (images->dims[0] != labels->dims[0]) {
    return Status::InvalidArgument(*images_path + " has " + std::to_string(images->dims[0]) +
                                   " images but " + *labels_path + " has " +
                                   std::to_string(labels->dims[0]) + " labels");
  }
  ImageDataset dataset;
  dataset.rows = images->dims[1];
  dataset.cols = images->dims[2];
  dataset.pixels = std::move(images->data);
  dataset.labels = std::move(labels->data);
  dataset.labels_path = *labels_path;
  if (const int known = KnownClassCount(dir); known > 0) {
    dataset.num_classes = known;
    if (Status status = CheckLabels(dataset, known); !status.ok()) return status;
    return dataset;
  }
  if (dataset.labels.empty()) return dataset;
  dataset.num_classes = 1 + *std::max_element(dataset.labels.begin(), dataset.labels.end());
  if (split == Split::kTrain) {
    if (Status status = CheckEveryClassPresent(dataset); !status.ok()) return status;
  }
  return dataset;
}

Status CheckLabels(const ImageDataset& dataset, int num_classes) {
  for (size_t i = 0; i < dataset.labels.size(); ++i) {
    if (dataset.labels[i] < num_classes) continue;
    return Status::InvalidArgument(
        dataset.labels_path + ": label " + std::to_string(dataset.labels[i]) + " at index " +
        std::to_string(i) + " is not one of the " + std::to_string(num_classes) + " classes (0-" +
        std::to_string(num_classes - 1) + ")");
  }
  return Status::OK();
}

}  // namespace cohort::train
