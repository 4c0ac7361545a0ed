// Keras-style callbacks: hooks the training loop calls at the start and end
// of training, testing, prediction, epochs and batches. The logs a callback
// sees are global values (aggregated over ranks exactly, by sample counts),
// the same numbers a serial run would produce.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace tnt {
class Model;
}

namespace tnt::callbacks {

using Logs = std::map<std::string, double>;

/// Base class: override the hooks you need.
///
/// Example:
///   struct PrintLoss : tnt::callbacks::Callback {
///     void on_epoch_end(std::int64_t epoch, const Logs& logs) override {
///       if (tnt::is_master_rank()) std::cout << epoch << ": " << logs.at("loss") << "\n";
///     }
///   };
class Callback {
 public:
  virtual ~Callback() = default;
  virtual void on_train_begin(const Logs&) {}
  virtual void on_train_end(const Logs&) {}
  virtual void on_epoch_begin(std::int64_t /*epoch*/, const Logs&) {}
  virtual void on_epoch_end(std::int64_t /*epoch*/, const Logs&) {}
  virtual void on_train_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_train_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_test_begin(const Logs&) {}
  virtual void on_test_end(const Logs&) {}
  virtual void on_test_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_test_batch_end(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_begin(const Logs&) {}
  virtual void on_predict_end(const Logs&) {}
  virtual void on_predict_batch_begin(std::int64_t /*batch*/, const Logs&) {}
  virtual void on_predict_batch_end(std::int64_t /*batch*/, const Logs&) {}

  /// The model being trained; set by fit/evaluate/predict.
  void set_model(Model* model) { model_ = model; }
  Model* model() const { return model_; }

 private:
  Model* model_ = nullptr;
};

using CallbackPtr = std::shared_ptr<Callback>;

/// Records the epoch logs; fit() returns one.
///
/// Example: auto history = model.fit(ds, opts); history.history.at("loss").back();
class History : public Callback {
 public:
  void on_train_begin(const Logs&) override;
  void on_epoch_end(std::int64_t epoch, const Logs& logs) override;

  std::vector<std::int64_t> epochs;
  std::map<std::string, std::vector<double>> history;
};

}  // namespace tnt::callbacks
