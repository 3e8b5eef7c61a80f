// The Python module cohort_torch: `import cohort_torch` registers the torch.distributed backend
// "cohort" (ProcessGroupCohort, process_group_cohort.h), so that an unchanged script calls
// torch.distributed.init_process_group("cohort"). The class subclasses torch's own
// torch.distributed.ProcessGroup type, so every torch.distributed function and DDP take it as
// they take ProcessGroupGloo.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include <mutex>
#include <stdexcept>
#include <vector>

#include "torch_backend/process_group_cohort.h"

namespace py = pybind11;
using cohort::torch_backend::ProcessGroupCohort;

namespace {

// The holder of the Python object: releases the GIL while the group is destroyed, since the
// destructor waits for the worker, whose Future callbacks (DDP's Python hooks) may need the GIL.
// torch holds its own process groups the same way.
template <typename T>
class NoGilHolder {
 public:
  NoGilHolder() = default;
  explicit NoGilHolder(T* pointer) : impl_(c10::intrusive_ptr<T>::reclaim_copy(pointer)) {}
  explicit NoGilHolder(c10::intrusive_ptr<T> pointer) : impl_(std::move(pointer)) {}
  NoGilHolder(const NoGilHolder&) = default;
  NoGilHolder(NoGilHolder&&) noexcept = default;
  ~NoGilHolder() {
    if (impl_ && PyGILState_Check()) {
      py::gil_scoped_release release;
      impl_.reset();
    }
  }
  T* get() const { return impl_.get(); }

 private:
  c10::intrusive_ptr<T> impl_;
};

// The groups made in this process, so that interpreter exit closes them in order (saying
// goodbye to the peers) even when the script never calls destroy_process_group.
std::mutex live_groups_mutex;
std::vector<c10::weak_intrusive_ptr<ProcessGroupCohort>>& LiveGroups() {
  static auto* groups = new std::vector<c10::weak_intrusive_ptr<ProcessGroupCohort>>();
  return *groups;
}

void ShutdownAll() {
  std::vector<c10::weak_intrusive_ptr<ProcessGroupCohort>> groups;
  {
    std::lock_guard<std::mutex> lock(live_groups_mutex);
    groups.swap(LiveGroups());
  }
  for (auto& weak : groups) {
    if (auto group = weak.lock()) group->Shutdown();
  }
}

}  // namespace

PYBIND11_DECLARE_HOLDER_TYPE(T, NoGilHolder<T>, true);

PYBIND11_MODULE(cohort_torch, module) {
  module.doc() =
      "Cohort's collectives as a torch.distributed backend. Importing this module registers the "
      "backend \"cohort\": torch.distributed.init_process_group(\"cohort\").";
  py::module_ distributed = py::module_::import("torch.distributed");
  py::module_::import("torch._C._distributed_c10d");

  py::class_<ProcessGroupCohort, c10d::ProcessGroup, NoGilHolder<ProcessGroupCohort>>(
      module, "ProcessGroupCohort",
      "A torch.distributed process group over Cohort's transport and collectives. Made by "
      "init_process_group(\"cohort\") from (store, rank, size, timeout). COHORT_PEER_TIMEOUT_S "
      "sets how long a silent rank may stay before it counts as hung (30 s); COHORT_JOB_SECRET "
      "authenticates the ranks; COHORT_TORCH_ADDRESS the address the others reach this rank at.")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             auto options = cohort::torch_backend::OptionsFromEnvironment(timeout);
             if (!options.ok()) throw std::invalid_argument(options.status().message());
             auto group = ProcessGroupCohort::Create(store, rank, size, *options);
             if (!group.ok()) throw std::runtime_error(group.status().message());
             {
               std::lock_guard<std::mutex> lock(live_groups_mutex);
               LiveGroups().emplace_back(*group);
             }
             return NoGilHolder<ProcessGroupCohort>(std::move(*group));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::call_guard<py::gil_scoped_release>())
      .def("shutdown", &ProcessGroupCohort::Shutdown,
           "Finishes queued operations and closes the connections; later operations raise.",
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("uses_same_host_memory", &ProcessGroupCohort::uses_same_host_memory,
                             "Whether large operations take the same-host path.");

  py::object backend = distributed.attr("Backend");
  if (!py::hasattr(backend, "COHORT")) {
    backend.attr("register_backend")("cohort", module.attr("ProcessGroupCohort"));
  }
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { ShutdownAll(); }, py::call_guard<py::gil_scoped_release>()));
}
