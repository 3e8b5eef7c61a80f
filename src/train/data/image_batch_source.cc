#include "train/data/image_batch_source.h"

namespace cohort::train {

StatusOr<Batch> ImageBatchSource::Gather(const std::vector<int64_t>& indices) const {
  const int64_t count = static_cast<int64_t>(indices.size());
  const int64_t pixels = dataset_->image_bytes();
  Batch batch;
  try {
    batch.inputs = torch::empty({count, 1, dataset_->rows, dataset_->cols}, torch::kFloat32);
    batch.targets = torch::empty({count}, torch::kInt64);
  } catch (const c10::Error& error) {
    return Status::Internal(std::string("cannot allocate an image batch: ") +
                            error.what_without_backtrace());
  }
  float* out = batch.inputs.data_ptr<float>();
  int64_t* labels = batch.targets.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    const uint8_t* in = dataset_->pixels.data() + indices[i] * pixels;
    for (int64_t p = 0; p < pixels; ++p) *out++ = static_cast<float>(in[p]) * (1.0f / 255.0f);
    labels[i] = dataset_->labels[indices[i]];
  }
  return batch;
}

}  // namespace cohort::train
