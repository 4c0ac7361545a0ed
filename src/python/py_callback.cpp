// PyCallback: the trampoline that puts a Python callback (a
// tnt.callbacks.Callback subclass, or any object with Keras's hooks) into
// the engine's callback list (py_callback.h). Which hooks the object
// implements is decided once per fit/evaluate/predict, so a hook it lacks
// costs nothing per step; the others are called under the GIL.
#include "python/py_callback.h"

#include <array>
#include <cstdint>
#include <memory>
#include <utility>

#include "python/py_object.h"

namespace tnt::python {
namespace {

// The Keras hooks a Python callback may have, in kHookNames' order.
enum Hook : std::size_t {
  kTrainBegin,
  kTrainEnd,
  kEpochBegin,
  kEpochEnd,
  kTrainBatchBegin,
  kTrainBatchEnd,
  kTestBegin,
  kTestEnd,
  kTestBatchBegin,
  kTestBatchEnd,
  kPredictBegin,
  kPredictEnd,
  kPredictBatchBegin,
  kPredictBatchEnd,
  kHookCount
};
constexpr std::array<const char*, kHookCount> kHookNames = {
    "on_train_begin",         "on_train_end",        "on_epoch_begin",   "on_epoch_end",
    "on_train_batch_begin",   "on_train_batch_end",  "on_test_begin",    "on_test_end",
    "on_test_batch_begin",    "on_test_batch_end",   "on_predict_begin", "on_predict_end",
    "on_predict_batch_begin", "on_predict_batch_end"};

// Which hooks `object` implements: those it has, except the no-ops it
// inherits from tnt.callbacks.Callback (a method whose function is the base
// class's own). Hooks set on the instance (LambdaCallback) count.
std::array<bool, kHookCount> implemented_hooks(const py::object& object) {
  const py::object base = py::module_::import("tarantella.callbacks").attr("Callback");
  std::array<bool, kHookCount> out{};
  for (std::size_t h = 0; h < kHookCount; ++h) {
    const py::object fn = py::getattr(object, kHookNames[h], py::none());
    const py::object func = py::getattr(fn, "__func__", py::none());
    out[h] = !fn.is_none() && !func.is(base.attr("__dict__")[kHookNames[h]]);
  }
  return out;
}

// Keras hooks of a Python object, called under the GIL. Which hooks the
// object implements is decided once, when fit/evaluate/predict starts: the
// others return at once, without taking the GIL, so a callback with only
// on_epoch_end costs nothing per step.
class PyCallback final : public callbacks::Callback {
 public:
  using Logs = callbacks::Logs;
  explicit PyCallback(py::object object)
      : object_(share_object(std::move(object))), hooks_(implemented_hooks(*object_)) {
    // An object without the attributes keeps callbacks::Callback's defaults.
    aggregate_logs =
        py::getattr(*object_, "aggregate_logs", py::bool_(aggregate_logs)).cast<bool>();
    run_on_all_ranks =
        py::getattr(*object_, "run_on_all_ranks", py::bool_(run_on_all_ranks)).cast<bool>();
  }
  // Keras's rule: a callback that implements a batch-end hook gets the
  // batch's logs (a host synchronisation per step on a GPU); one that does
  // not costs none.
  bool wants_batch_logs(std::int64_t) const override {
    return hooks_[kTrainBatchEnd] || hooks_[kTestBatchEnd];
  }
  void on_train_begin(const Logs& l) override { call(kTrainBegin, l); }
  void on_train_end(const Logs& l) override { call(kTrainEnd, l); }
  void on_epoch_begin(std::int64_t e, const Logs& l) override { call(kEpochBegin, e, l); }
  void on_epoch_end(std::int64_t e, const Logs& l) override { call(kEpochEnd, e, l); }
  void on_train_batch_begin(std::int64_t b, const Logs& l) override {
    call(kTrainBatchBegin, b, l);
  }
  void on_train_batch_end(std::int64_t b, const Logs& l) override { call(kTrainBatchEnd, b, l); }
  void on_test_begin(const Logs& l) override { call(kTestBegin, l); }
  void on_test_end(const Logs& l) override { call(kTestEnd, l); }
  void on_test_batch_begin(std::int64_t b, const Logs& l) override { call(kTestBatchBegin, b, l); }
  void on_test_batch_end(std::int64_t b, const Logs& l) override { call(kTestBatchEnd, b, l); }
  void on_predict_begin(const Logs& l) override { call(kPredictBegin, l); }
  void on_predict_end(const Logs& l) override { call(kPredictEnd, l); }
  void on_predict_batch_begin(std::int64_t b, const Logs& l) override {
    call(kPredictBatchBegin, b, l);
  }
  void on_predict_batch_end(std::int64_t b, const Logs& l) override {
    call(kPredictBatchEnd, b, l);
  }

 private:
  template <typename... Args>
  void call(Hook hook, Args&&... args) {
    if (!hooks_[hook]) return;
    py::gil_scoped_acquire gil;
    if (!params_given_) {
      py::dict params;
      params["epochs"] = this->params().epochs;
      params["steps"] = this->params().steps < 0 ? py::object(py::none())
                                                 : py::object(py::int_(this->params().steps));
      params["verbose"] = this->params().verbose;
      // Keras's way, so that an override of set_params sees them.
      if (py::hasattr(*object_, "set_params")) {
        object_->attr("set_params")(params);
      } else {
        object_->attr("params") = params;
      }
      params_given_ = true;
    }
    object_->attr(kHookNames[hook])(std::forward<Args>(args)...);
  }
  SharedPyObject object_;
  std::array<bool, kHookCount> hooks_;
  bool params_given_ = false;
};

}  // namespace

std::vector<callbacks::CallbackPtr> to_callbacks(const py::list& list) {
  std::vector<callbacks::CallbackPtr> out;
  for (const py::handle item : list) {
    if (py::isinstance<callbacks::Callback>(item)) {
      out.push_back(item.cast<callbacks::CallbackPtr>());
    } else {
      out.push_back(std::make_shared<PyCallback>(py::reinterpret_borrow<py::object>(item)));
    }
  }
  return out;
}

}  // namespace tnt::python
