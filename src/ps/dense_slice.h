// DenseSlice: the rows of one dense variable that one parameter server holds, with the optimizer
// state that goes with them.
//
// A slice is rows [first_row, first_row + row_count) of a [rows, row_width] float32 variable
// (placement.h decides the range). Requests name rows in the variable's own numbering, so a
// worker never has to know how the server stores them, and a request for rows outside the slice
// is refused with the range this server does hold: that is what a worker with a stale placement
// sends, and it should say so rather than read the wrong rows.
//
// Thread-safe: each slice has its own lock, so pushes to different variables apply in parallel
// while two pushes to the same variable never interleave mid-row.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "ps/optimizer.h"

namespace cohort::ps {

// What a slice is: enough to create it again, and to tell whether a second create asks for the
// same thing.
struct DenseSliceSpec {
  std::string variable;
  int64_t first_row = 0;
  int64_t row_count = 0;
  int64_t row_width = 1;
  OptimizerConfig optimizer;

  bool operator==(const DenseSliceSpec&) const = default;
  int64_t element_count() const { return row_count * row_width; }
};

// The values a slice holds: parameters, one vector per optimizer slot, and (Adam only) how many
// updates each row has received. What a checkpoint saves.
struct DenseSliceState {
  std::vector<float> parameters;
  std::vector<std::vector<float>> slots;
  std::vector<int64_t> row_steps;
};

class DenseSlice {
 public:
  // A slice with `initial` parameters (element_count() of them; empty means zeros) and fresh
  // optimizer slots. InvalidArgument for a bad shape, optimizer setting or initial size.
  static StatusOr<std::unique_ptr<DenseSlice>> Create(const DenseSliceSpec& spec,
                                                      std::vector<float> initial);
  // A slice with saved state; InvalidArgument when the state does not fit the spec.
  static StatusOr<std::unique_ptr<DenseSlice>> Restore(const DenseSliceSpec& spec,
                                                       DenseSliceState state);

  const DenseSliceSpec& spec() const { return spec_; }

  // Copies rows [first_row, first_row + row_count) into `out` (row_count * row_width floats).
  Status Read(int64_t first_row, int64_t row_count, float* out) const;
  // Applies a gradient for the same kind of row range with the slice's optimizer.
  Status ApplyGradient(int64_t first_row, int64_t row_count, const float* gradient);

  DenseSliceState Snapshot() const;

  // InvalidArgument, naming the rows this slice holds, unless it holds all of the range.
  Status CheckRange(int64_t first_row, int64_t row_count) const;

 private:
  DenseSlice(DenseSliceSpec spec, DenseSliceState state)
      : spec_(std::move(spec)), optimizer_(spec_.optimizer), state_(std::move(state)) {}

  const DenseSliceSpec spec_;
  const Optimizer optimizer_;
  mutable std::mutex mutex_;
  DenseSliceState state_;
};

// InvalidArgument unless `spec` has a name, positive sizes and a valid optimizer.
Status ValidateDenseSliceSpec(const DenseSliceSpec& spec);

}  // namespace cohort::ps
