// emulated_all_reduce_worker: one rank of an all-reduce group, for the emulated-hosts tests.
//
//   emulated_all_reduce_worker RANK HOST:PORT,HOST:PORT,...
//
// Connects to the group the endpoints name (rank r listens on the r-th), prints the topology the
// communicator agreed on and its all-reduce algorithm (and whether it reads memory within hosts),
// runs an all-reduce of every data type and operator over several counts (0, odd, larger than one
// segment) and checks every element against the exact result. Inputs are small integers, so that
// every sum and average is exact in every type. Prints "topology: ..." and "all-reduce: checked N
// operations"; exit status 0 on success, 1 with a message naming the first wrong element or the
// failure, 2 for bad arguments.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "collective/communicator.h"
#include "collective/data_type.h"
#include "collective/element_value.h"
#include "net/tcp/tcp_transport.h"

namespace cohort::collective {
namespace {

// Element i of `rank`'s input: an integer in [-32, 31].
int InputValue(int rank, size_t i) { return static_cast<int>((i * 7 + rank * 13) % 64) - 32; }

void SetElement(DataType type, uint8_t* bytes, size_t i, int value) {
  uint8_t* at = bytes + i * SizeOf(type);
  switch (type) {
    case DataType::kFloat32: {
      float v = static_cast<float>(value);
      std::memcpy(at, &v, 4);
      return;
    }
    case DataType::kFloat64: {
      double v = value;
      std::memcpy(at, &v, 8);
      return;
    }
    case DataType::kInt32: {
      int32_t v = value;
      std::memcpy(at, &v, 4);
      return;
    }
    case DataType::kInt64: {
      int64_t v = value;
      std::memcpy(at, &v, 8);
      return;
    }
    case DataType::kBFloat16: {
      uint16_t v = FloatToBFloat16(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      return;
    }
    case DataType::kFloat16: {
      uint16_t v = FloatToFloat16(static_cast<float>(value));
      std::memcpy(at, &v, 2);
      return;
    }
  }
}

double Expected(DataType type, ReduceOp op, int ranks, size_t i) {
  int sum = 0;
  int low = InputValue(0, i);
  int high = low;
  for (int rank = 0; rank < ranks; ++rank) {
    const int value = InputValue(rank, i);
    sum += value;
    low = std::min(low, value);
    high = std::max(high, value);
  }
  switch (op) {
    case ReduceOp::kSum:
      return sum;
    case ReduceOp::kMin:
      return low;
    case ReduceOp::kMax:
      return high;
    case ReduceOp::kAverage:
      if (type == DataType::kInt32 || type == DataType::kInt64) return sum / ranks;
      return static_cast<double>(sum) / ranks;
  }
  return 0;
}

int Run(int rank, const std::vector<std::string>& endpoints) {
  cluster::ClusterSpec spec;
  spec.jobs["worker"] = endpoints;
  net::TransportOptions options;
  options.job_name = "emulated-all-reduce";
  options.secret = "emulated all-reduce secret";
  options.startup_timeout = std::chrono::seconds(60);
  auto transport = net::TcpTransport::Connect(spec, {"worker", rank}, options);
  if (!transport.ok()) {
    std::printf("rank %d: %s\n", rank, transport.status().ToString().c_str());
    return 1;
  }
  CommunicatorOptions communicator_options;
  communicator_options.ring.segment_bytes = 64 * 1024;
  auto created = Communicator::Create(std::move(*transport), communicator_options);
  if (!created.ok()) {
    std::printf("rank %d: %s\n", rank, created.status().ToString().c_str());
    return 1;
  }
  Communicator& communicator = **created;
  std::printf(
      "topology: %s; all-reduce: %s%s\n", communicator.topology().Describe().c_str(),
      communicator.uses_hierarchical_all_reduce() ? "hierarchical" : "ring",
      communicator.uses_same_host_memory_within_hosts() ? " (memory reads within hosts)" : "");
  const DataType types[] = {DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16,
                            DataType::kFloat16, DataType::kInt32,   DataType::kInt64};
  const ReduceOp ops[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax};
  const size_t counts[] = {0, 1, 3, 1001, 65537, (1u << 20) + 3};
  int checked = 0;
  for (DataType type : types) {
    for (ReduceOp op : ops) {
      for (size_t count : counts) {
        std::vector<uint8_t> data(count * SizeOf(type));
        for (size_t i = 0; i < count; ++i) SetElement(type, data.data(), i, InputValue(rank, i));
        Status status = communicator.AllReduce(data.data(), count, type, op);
        if (!status.ok()) {
          std::printf("rank %d: %s\n", rank, status.ToString().c_str());
          return 1;
        }
        for (size_t i = 0; i < count; ++i) {
          const double expected = Expected(type, op, communicator.size(), i);
          const double got = ElementValue(type, data.data(), i);
          if (got != expected) {
            std::printf("rank %d: %s %s of %zu: element %zu is %g, expected %g\n", rank, Name(type),
                        Name(op), count, i, got, expected);
            return 1;
          }
        }
        ++checked;
      }
    }
  }
  std::printf("all-reduce: checked %d operations\n", checked);
  return 0;
}

}  // namespace
}  // namespace cohort::collective

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: emulated_all_reduce_worker RANK HOST:PORT,HOST:PORT,...\n");
    return 2;
  }
  std::vector<std::string> endpoints;
  std::stringstream list(argv[2]);
  std::string endpoint;
  while (std::getline(list, endpoint, ',')) endpoints.push_back(endpoint);
  const int rank = std::atoi(argv[1]);
  if (rank < 0 || rank >= static_cast<int>(endpoints.size())) {
    std::fprintf(stderr, "rank %s is not one of the %zu endpoints\n", argv[1], endpoints.size());
    return 2;
  }
  return cohort::collective::Run(rank, endpoints);
}
