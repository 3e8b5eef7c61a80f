#include "train/data/image_dataset.h"

#include <algorithm>
#include <filesystem>

#include "train/data/idx_file.h"

namespace cohort::train {
namespace {

// Returns "<dir>/<stem>.gz" or "<dir>/<stem>", whichever exists, or a NotFound naming both.
StatusOr<std::string> FindIdxFile(const std::string& dir, const std::string& stem) {
  const std::filesystem::path base = std::filesystem::path(dir) / stem;
  for (const std::string& candidate : {base.string() + ".gz", base.string()}) {
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate;
  }
  return Status::NotFound(base.string() + "[.gz]: no such file");
}

}  // namespace

const std::vector<std::string>& FashionMnistClassNames() {
  static const std::vector<std::string> kNames = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                                  "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                                  "Bag",         "Ankle boot"};
  return kNames;
}

std::vector<std::string> ClassNamesFor(const std::string& data_dir, int num_classes) {
  std::filesystem::path dir = std::filesystem::path(data_dir).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "…/fashion-mnist/"
  if (num_classes == 10 && dir.filename().string().find("fashion") != std::string::npos) {
    return FashionMnistClassNames();
  }
  std::vector<std::string> names;
  for (int label = 0; label < num_classes; ++label) names.push_back(std::to_string(label));
  return names;
}

StatusOr<ImageDataset> LoadImageDataset(const std::string& dir, Split split) {
  std::error_code error;
  if (!std::filesystem::is_directory(dir, error)) {
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
  if (!dataset.labels.empty()) {
    dataset.num_classes = 1 + *std::max_element(dataset.labels.begin(), dataset.labels.end());
  }
  return dataset;
}

}  // namespace cohort::train
