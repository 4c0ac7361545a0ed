// The C++ half of tnt.DistributedOptimizer: the initial broadcast of the
// parameters, and a dp::GradientSynchronizer over the Python parameters.
//
// Note: a torch.nn.Parameter from Python is the same TensorImpl as the
// at::Tensor that arrives here, so the synchronizer's C++ autograd hooks fire
// during Python's loss.backward() and fill the buckets, and the allreduce of a
// full bucket is enqueued at once while backward continues, exactly as for
// the C++ DistributedOptimizer (no Python runs in the hooks, and
// backward runs without the GIL). finish() waits for the buckets, so it
// releases the GIL; afterwards each parameter's .grad is its slice of the
// reduced bucket, which the wrapped Python optimizer then steps on.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <tarantella/base/config.h>
#include <tarantella/base/error.h>
#include <tarantella/data/batch_share.h>
#include <tarantella/dp/distributed_optimizer.h>
#include <tarantella/dp/gradient_sync.h>
#include <tarantella/dp/share_weight.h>
#include <tarantella/dp/state_sync.h>
#include <tarantella/runtime/runtime.h>

#include "python/bindings.h"

namespace tnt::python {
namespace {

/// A GradientSynchronizer armed for one step at a time, its weight n_r / B
/// read from the loader's share when the step's first gradient arrives
/// (dp::share_weight, as the C++ DistributedOptimizer does).
class GradientSync {
 public:
  GradientSync(comm::ProcessGroup group, std::vector<at::Tensor> params,
               std::shared_ptr<data::BatchShare> share,
               std::optional<std::size_t> fusion_threshold_bytes)
      : group_(std::move(group)), share_(std::move(share)) {
    const Config config = current_config();
    sync_ = std::make_unique<dp::GradientSynchronizer>(
        group_, std::move(params),
        dp::SyncOptions()
            .fusion_threshold_bytes(fusion_threshold_bytes.value_or(config.fusion_threshold_bytes))
            .overlap(config.overlap));
    arm();
  }
  ~GradientSync() {
    // Waits for buckets in flight.
    if (Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release no_gil;
      sync_.reset();
    } else {
      sync_.reset();
    }
  }

  void arm() { sync_->begin_step(dp::share_weight(share_, group_.size()), /*reduce=*/true); }
  void finish() {
    py::gil_scoped_release no_gil;
    sync_->finish();
  }
  void discard() {
    py::gil_scoped_release no_gil;
    sync_->discard();
  }
  bool armed() const { return sync_->armed(); }
  std::size_t bucket_count() const { return sync_->buckets().size(); }
  void set_share(std::shared_ptr<data::BatchShare> share) { share_ = std::move(share); }

 private:
  comm::ProcessGroup group_;
  std::shared_ptr<const data::BatchShare> share_;
  std::unique_ptr<dp::GradientSynchronizer> sync_;
};

void broadcast_parameters(const comm::ProcessGroup& group, const std::vector<at::Tensor>& params,
                          const std::vector<std::string>& names, int root) {
  TNT_CHECK(names.size() == params.size(), "broadcast_parameters: ", names.size(),
            " names for ", params.size(), " parameters");
  dp::NamedTensors named;
  for (std::size_t i = 0; i < params.size(); ++i) named.emplace_back(names[i], params[i]);
  py::gil_scoped_release no_gil;
  dp::check_same_structure(group, named, "parameters");
  // In place on the Python parameters; no autograd history.
  at::NoGradGuard no_grad;
  dp::broadcast_tensors(group, params, root);
}

}  // namespace

void bind_optimizer(py::module_& m) {
  py::class_<GradientSync>(m, "GradientSync",
                           "Fused, overlapped gradient allreduce over the given parameters "
                           "(dp::GradientSynchronizer); used by tnt.DistributedOptimizer.")
      .def(py::init<comm::ProcessGroup, std::vector<at::Tensor>,
                    std::shared_ptr<data::BatchShare>, std::optional<std::size_t>>(),
           py::arg("group"), py::arg("params"), py::arg("share") = nullptr,
           py::arg("fusion_threshold_bytes") = py::none())
      .def("arm", &GradientSync::arm, "Arms the hooks for the next step.")
      .def("finish", &GradientSync::finish,
           "Waits for every bucket; sets each parameter's .grad to the reduced gradient.")
      .def("discard", &GradientSync::discard,
           "Drops the gradients received since arm() (waits for buckets already sent); "
           "stays armed.")
      .def_property_readonly("armed", &GradientSync::armed)
      .def_property_readonly("bucket_count", &GradientSync::bucket_count)
      .def("set_share", &GradientSync::set_share, py::arg("share"));

  m.def("broadcast_parameters", &broadcast_parameters, py::arg("group"), py::arg("params"),
        py::arg("names"), py::arg("root") = 0,
        "Collective: checks that every rank has the same parameters (names, shapes, dtypes) "
        "and gives every rank root's values, in place.");
}

}  // namespace tnt::python
