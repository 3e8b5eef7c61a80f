#include "ps/dense_slice.h"

#include <cstring>

namespace cohort::ps {
namespace {

// Refuses slices whose element count overflows or is beyond any sensible server memory.
constexpr int64_t kMaxSliceElements = int64_t{1} << 36;

std::string Describe(const DenseSliceSpec& spec) {
  return "variable \"" + spec.variable + "\" rows [" + std::to_string(spec.first_row) + ", " +
         std::to_string(spec.first_row + spec.row_count) + ")";
}

}  // namespace

Status ValidateDenseSliceSpec(const DenseSliceSpec& spec) {
  if (spec.variable.empty()) return Status::InvalidArgument("a dense slice has an empty name");
  if (spec.first_row < 0 || spec.row_count <= 0 || spec.row_width <= 0 ||
      spec.row_count > kMaxSliceElements / spec.row_width) {
    return Status::InvalidArgument(
        "variable \"" + spec.variable + "\": bad slice shape: first row " +
        std::to_string(spec.first_row) + ", " + std::to_string(spec.row_count) + " rows of width " +
        std::to_string(spec.row_width));
  }
  Status optimizer = ValidateOptimizerConfig(spec.optimizer);
  if (!optimizer.ok()) return optimizer.WithContext("variable \"" + spec.variable + "\"");
  return Status::OK();
}

StatusOr<std::unique_ptr<DenseSlice>> DenseSlice::Create(const DenseSliceSpec& spec,
                                                         std::vector<float> initial) {
  COHORT_RETURN_IF_ERROR(ValidateDenseSliceSpec(spec));
  const size_t elements = static_cast<size_t>(spec.element_count());
  if (initial.empty()) initial.assign(elements, 0.0f);
  DenseSliceState state;
  state.parameters = std::move(initial);
  for (int slot = 0; slot < SlotCount(spec.optimizer.kind); ++slot) {
    state.slots.emplace_back(elements, SlotInitialValue(spec.optimizer, slot));
  }
  if (spec.optimizer.kind == OptimizerKind::kAdam) state.row_steps.assign(spec.row_count, 0);
  return Restore(spec, std::move(state));
}

StatusOr<std::unique_ptr<DenseSlice>> DenseSlice::Restore(const DenseSliceSpec& spec,
                                                          DenseSliceState state) {
  COHORT_RETURN_IF_ERROR(ValidateDenseSliceSpec(spec));
  const size_t elements = static_cast<size_t>(spec.element_count());
  if (state.parameters.size() != elements) {
    return Status::InvalidArgument(Describe(spec) + ": " + std::to_string(state.parameters.size()) +
                                   " initial values for " + std::to_string(elements) + " elements");
  }
  if (state.slots.size() != static_cast<size_t>(SlotCount(spec.optimizer.kind))) {
    return Status::InvalidArgument(Describe(spec) + ": " + std::to_string(state.slots.size()) +
                                   " optimizer slots, " + OptimizerName(spec.optimizer.kind) +
                                   " keeps " + std::to_string(SlotCount(spec.optimizer.kind)));
  }
  for (const auto& slot : state.slots) {
    if (slot.size() != elements) {
      return Status::InvalidArgument(Describe(spec) + ": an optimizer slot has the wrong size");
    }
  }
  const size_t steps = spec.optimizer.kind == OptimizerKind::kAdam ? spec.row_count : 0;
  if (state.row_steps.size() != steps) {
    return Status::InvalidArgument(Describe(spec) + ": wrong number of row step counters");
  }
  return std::unique_ptr<DenseSlice>(new DenseSlice(spec, std::move(state)));
}

Status DenseSlice::CheckRange(int64_t first_row, int64_t row_count) const {
  const int64_t end = spec_.first_row + spec_.row_count;
  if (first_row < spec_.first_row || row_count < 0 || first_row > end ||
      row_count > end - first_row) {
    return Status::InvalidArgument(
        "rows [" + std::to_string(first_row) + ", " + std::to_string(first_row + row_count) +
        ") of variable \"" + spec_.variable + "\" are not all held here; this server holds rows [" +
        std::to_string(spec_.first_row) + ", " + std::to_string(end) + ")");
  }
  return Status::OK();
}

Status DenseSlice::Read(int64_t first_row, int64_t row_count, float* out) const {
  COHORT_RETURN_IF_ERROR(CheckRange(first_row, row_count));
  const size_t offset = static_cast<size_t>((first_row - spec_.first_row) * spec_.row_width);
  // A read of no rows (a worker asking whether the variable exists yet) may come with no buffer,
  // which memcpy must not be given even for 0 bytes.
  if (row_count == 0) return Status::OK();
  std::lock_guard<std::mutex> lock(mutex_);
  std::memcpy(out, state_.parameters.data() + offset,
              static_cast<size_t>(row_count * spec_.row_width) * sizeof(float));
  return Status::OK();
}

Status DenseSlice::ApplyGradient(int64_t first_row, int64_t row_count, const float* gradient) {
  COHORT_RETURN_IF_ERROR(CheckRange(first_row, row_count));
  const int64_t width = spec_.row_width;
  const int64_t local_first = first_row - spec_.first_row;
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<float*> slots;
  auto apply = [&](int64_t local_row, int64_t rows, int64_t step) {
    const size_t offset = static_cast<size_t>(local_row * width);
    slots.clear();
    for (auto& slot : state_.slots) slots.push_back(slot.data() + offset);
    optimizer_.Apply(state_.parameters.data() + offset, slots.data(),
                     gradient + (local_row - local_first) * width,
                     static_cast<size_t>(rows * width), step);
  };
  if (state_.row_steps.empty()) {
    apply(local_first, row_count, 0);
    return Status::OK();
  }
  // Adam: rows that have seen the same number of updates (almost always all of them) share one
  // bias correction, so they go to the optimizer in one run.
  int64_t run_start = local_first;
  for (int64_t row = local_first; row < local_first + row_count; ++row) {
    ++state_.row_steps[row];
    if (state_.row_steps[row] != state_.row_steps[run_start]) {
      apply(run_start, row - run_start, state_.row_steps[run_start]);
      run_start = row;
    }
  }
  if (row_count > 0)
    apply(run_start, local_first + row_count - run_start, state_.row_steps[run_start]);
  return Status::OK();
}

DenseSliceState DenseSlice::Snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

}  // namespace cohort::ps
