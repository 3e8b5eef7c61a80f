// Kubernetes resource quantities ("500m", "2", "1Gi", "1.5e3"), read and added exactly.
//
// The operator sums the requests of a gang's pods into its PodGroup's minResources; Cohort does the
// same with this small type. A quantity is held as a whole number of nano-units (the finest unit
// Kubernetes keeps), so sums are exact. How it prints follows the first quantity added: binary
// suffixes (Ki, Mi...) when it was written with one, decimal ones (k, M...) otherwise, falling back
// to m, u or n when the value has a fraction. The API server canonicalises it again anyway.
//
//   StatusOr<Quantity> cpu = Quantity::Parse("500m");
//   total.Add(*cpu);
//   total.ToString();  // "1500m"
#pragma once

#include <string>

#include "base/status.h"

namespace cohort::kube {

class Quantity {
 public:
  // Longest quantity text read; Kubernetes' own are far shorter.
  static constexpr size_t kMaxTextLength = 64;

  // Errors say what is wrong with `text` ("\"12Q\": unknown suffix Q"). Negative quantities and
  // values of 10^27 units or more are refused (no resource needs them).
  static StatusOr<Quantity> Parse(const std::string& text);

  // Adds `other`; the format is kept from the first non-zero quantity added. An error when the
  // sum passes the bound Parse enforces.
  Status Add(const Quantity& other);

  bool IsZero() const { return nano_ == 0; }
  std::string ToString() const;

 private:
  __int128 nano_ = 0;
  bool binary_ = false;
  bool format_set_ = false;
};

}  // namespace cohort::kube
