// A TrainingHost for tests that drive the engine directly (its public face
// train::Engine, or train::EngineState, whose contexts the loops run on): stop,
// learning rate, weights and position through the engine; no files.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/base/error.h>
#include <tarantella/comm/process_group.h>
#include <tarantella/train/training_host.h>

namespace tnt_test {

template <typename E>
class TestHostOf final : public tnt::train::TrainingHost {
 public:
  explicit TestHostOf(E& e) : e_(e) {}
  void request_stop() override { stop_ = true; }
  bool stop_requested() const override { return stop_; }
  double learning_rate() const override { return e_.learning_rate(); }
  void set_learning_rate(double rate) override { e_.set_learning_rate(rate); }
  std::vector<torch::Tensor> get_weights() const override { return weights_of(e_); }
  void set_weights(const std::vector<torch::Tensor>&) override { unsupported(); }
  void save(const std::string&) override { unsupported(); }
  void save_weights(const std::string&) override { unsupported(); }
  const tnt::comm::ProcessGroup& group() const override { return e_.group(); }
  const tnt::train::TrainingPosition& position() const override { return current(e_.position()); }
  void save_backup(const std::string&) override { unsupported(); }
  tnt::train::TrainingPosition restore_backup(const std::string&) override {
    unsupported();
    return {};
  }
  void resume_from(const tnt::train::TrainingPosition& p) override { resume(e_, p); }

  static std::vector<torch::Tensor> weights_of(const E& e) {
    std::vector<torch::Tensor> out;
    for (const auto& [name, t] : e.net().named_parameters()) out.push_back(t.detach().clone());
    return out;
  }

 private:
  // train::Engine gives the position itself; EngineState its keeper
  // (train/loop/position_keeper.h).
  static const tnt::train::TrainingPosition& current(const tnt::train::TrainingPosition& p) {
    return p;
  }
  template <typename Keeper>
  static auto current(const Keeper& k) -> decltype(k.current()) {
    return k.current();
  }
  template <typename T>
  static auto resume(T& e, const tnt::train::TrainingPosition& p) -> decltype(e.resume_from(p)) {
    return e.resume_from(p);
  }
  template <typename T>
  static auto resume(T& e, const tnt::train::TrainingPosition& p)
      -> decltype(e.position().resume_from(p)) {
    return e.position().resume_from(p);
  }
  static void unsupported() { throw tnt::Error("not part of this test"); }
  E& e_;
  bool stop_ = false;
};
}  // namespace tnt_test
