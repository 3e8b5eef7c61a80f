#include "train/gradient_buckets.h"

#include <torch/autograd.h>

namespace cohort::train {

GradientBuckets::GradientBuckets(std::vector<torch::Tensor> parameters, Strategy* strategy,
                                 size_t bucket_bytes, GradientCompression compression)
    : parameters_(std::move(parameters)),
      strategy_(strategy),
      wire_type_(WireType(compression)),
      slots_(parameters_.size()) {
  size_t bytes_in_bucket = 0;
  for (size_t i = parameters_.size(); i-- > 0;) {
    if (buckets_.empty() || bytes_in_bucket > bucket_bytes) {
      buckets_.emplace_back();
      bytes_in_bucket = 0;
    }
    Bucket& bucket = buckets_.back();
    slots_[i].bucket = buckets_.size() - 1;
    slots_[i].offset = 0;
    for (size_t member : bucket.members) slots_[i].offset += parameters_[member].numel();
    bucket.members.push_back(i);
    bytes_in_bucket += parameters_[i].numel() * sizeof(float);
  }
  for (Bucket& bucket : buckets_) {
    int64_t elements = 0;
    for (size_t member : bucket.members) elements += parameters_[member].numel();
    bucket.flat = torch::zeros({elements}, torch::kFloat32);
    if (wire_type_) {
      bucket.wire =
          torch::zeros({elements}, *wire_type_ == collective::DataType::kBFloat16 ? torch::kBFloat16
                                                                                  : torch::kHalf);
    }
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    hook_handles_.push_back(parameters_[i].register_hook(
        [this, i](torch::Tensor gradient) { OnGradient(i, gradient); }));
  }
}

// The hooks capture `this`: remove them, since the model may outlive the buckets.
GradientBuckets::~GradientBuckets() {
  for (size_t i = 0; i < parameters_.size(); ++i) parameters_[i].remove_hook(hook_handles_[i]);
}

std::vector<std::vector<size_t>> GradientBuckets::Layout() const {
  std::vector<std::vector<size_t>> layout;
  for (const Bucket& bucket : buckets_) layout.push_back(bucket.members);
  return layout;
}

void GradientBuckets::BeginStep() {
  for (torch::Tensor& parameter : parameters_) parameter.mutable_grad().reset();
  for (Bucket& bucket : buckets_) {
    bucket.pending = bucket.members.size();
    bucket.sum.reset();
  }
  for (Slot& slot : slots_) slot.arrived = false;
  next_to_start_ = 0;
  first_error_ = Status::OK();
  in_step_ = true;
}

void GradientBuckets::OnGradient(size_t parameter, const torch::Tensor& gradient) {
  if (!in_step_) return;
  Slot& slot = slots_[parameter];
  if (slot.arrived) return;  // a second backward in the same step; the first gradient counts
  Bucket& bucket = buckets_[slot.bucket];
  // With compression the gradient is rounded straight into the 16-bit copy that goes on the wire:
  // one pass over it, and none over the whole bucket when it completes.
  (wire_type_ ? bucket.wire : bucket.flat)
      .narrow(0, slot.offset, gradient.numel())
      .copy_(gradient.reshape({-1}));
  slot.arrived = true;
  if (--bucket.pending == 0) StartReadyBuckets();
}

void GradientBuckets::StartReadyBuckets() {
  while (next_to_start_ < buckets_.size() && buckets_[next_to_start_].pending == 0) {
    StartBucket(buckets_[next_to_start_]);
    ++next_to_start_;
  }
}

void GradientBuckets::StartBucket(Bucket& bucket) {
  const size_t count = static_cast<size_t>(bucket.flat.numel());
  // Uncompressed buckets are averaged by the collective itself; 16-bit ones are summed, and
  // FinishStep averages them in float32 while widening.
  auto sum = wire_type_ ? strategy_->StartSum16(static_cast<uint16_t*>(bucket.wire.data_ptr()),
                                                count, *wire_type_)
                        : strategy_->StartAverage(bucket.flat.data_ptr<float>(), count);
  if (sum.ok()) {
    bucket.sum = std::move(sum).value();
  } else if (first_error_.ok()) {
    first_error_ = sum.status();
  }
}

Status GradientBuckets::FinishStep(std::chrono::milliseconds timeout) {
  in_step_ = false;
  // Parameters backward did not reach contribute zeros, on every worker alike.
  for (size_t i = 0; i < parameters_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.arrived) continue;
    Bucket& bucket = buckets_[slot.bucket];
    (wire_type_ ? bucket.wire : bucket.flat).narrow(0, slot.offset, parameters_[i].numel()).zero_();
    slot.arrived = true;
    --bucket.pending;
  }
  StartReadyBuckets();

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (Bucket& bucket : buckets_) {
    if (!bucket.sum) continue;  // its start failed; first_error_ says why
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    Status status = bucket.sum->Wait(std::max(left, std::chrono::milliseconds(1)));
    if (!status.ok() && first_error_.ok()) first_error_ = status;
  }
  if (!first_error_.ok()) return first_error_;

  if (wire_type_) {
    const double scale = 1.0 / strategy_->num_workers();
    for (Bucket& bucket : buckets_) bucket.flat.copy_(bucket.wire).mul_(scale);
  }
  for (size_t i = 0; i < parameters_.size(); ++i) {
    const Slot& slot = slots_[i];
    parameters_[i].mutable_grad() = buckets_[slot.bucket]
                                        .flat.narrow(0, slot.offset, parameters_[i].numel())
                                        .view(parameters_[i].sizes());
  }
  return Status::OK();
}

}  // namespace cohort::train
