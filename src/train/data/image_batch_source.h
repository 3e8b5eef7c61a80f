// ImageBatchSource: an ImageDataset as a BatchSource.
//
// A batch's inputs are the images as float32 in [0, 1], shape [batch, 1, rows, cols]; its targets
// are the class labels as int64, shape [batch]. This is what the image models (models.h) take.
//
//   auto train = LoadImageDataset(dir, Split::kTrain);
//   ImageBatchSource source(&*train);    // the data set must outlive the source
#pragma once

#include "train/data/batch_source.h"
#include "train/data/image_dataset.h"

namespace cohort::train {

class ImageBatchSource : public BatchSource {
 public:
  explicit ImageBatchSource(const ImageDataset* dataset) : dataset_(dataset) {}

  const ImageDataset& dataset() const { return *dataset_; }

  int64_t size() const override { return dataset_->size(); }
  StatusOr<Batch> Gather(const std::vector<int64_t>& indices) const override;

 private:
  const ImageDataset* dataset_;
};

}  // namespace cohort::train
