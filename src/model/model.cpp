#include "model/model_impl.h"


#include <cstring>
#include <iostream>
#include <sstream>

#include <fmt/format.h>

#include <tarantella/base/error.h>
#include <tarantella/keras/sync_batchnorm.h>
#include <tarantella/base/logging.h>
#include <tarantella/runtime/runtime.h>


namespace tnt {

double Model::loss_scale() const {
  const auto state = impl_->engine().loss_scale();
  return state ? state->scale : 1.0;
}

std::int64_t Model::skipped_steps() const {
  const auto state = impl_->engine().loss_scale();
  return state ? state->skipped_steps : 0;
}

Model::Model(std::shared_ptr<ModuleAdapter> adapter) : Model(std::move(adapter), default_group()) {}

Model::Model(std::shared_ptr<ModuleAdapter> adapter, comm::ProcessGroup group)
    : impl_(std::make_unique<Impl>(
          *this, std::make_unique<train::Engine>(
                     std::move(adapter), std::move(group),
                     // The facade resolves the run's configuration; the
                     // engine only takes explicit options.
                     train::EngineOptions::from_config(current_config())))) {}

const comm::ProcessGroup& Model::group() const { return impl_->engine().group(); }

Model::~Model() = default;
Model::Model(Model&& other) noexcept
    : stop_training(other.stop_training), impl_(std::move(other.impl_)) {
  if (impl_) impl_->self = this;
}
Model& Model::operator=(Model&& other) noexcept {
  stop_training = other.stop_training;
  impl_ = std::move(other.impl_);
  if (impl_) impl_->self = this;
  return *this;
}

void Model::compile(CompileOptions options) { impl_->engine().compile(std::move(options)); }

bool Model::is_compiled() const { return impl_->engine().compiled() != nullptr; }

torch::Tensor Model::forward(const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> on_device;
  for (const auto& t : inputs) on_device.push_back(t.to(device()));
  return impl_->engine().run(on_device);
}

NamedTensorList Model::named_parameters() const { return impl_->engine().net().named_parameters(); }
NamedTensorList Model::named_buffers() const { return impl_->engine().net().named_buffers(); }

std::vector<torch::Tensor> Model::get_weights() const { return impl_->get_weights(); }

void Model::set_weights(const std::vector<torch::Tensor>& weights) {
  impl_->engine().set_weights(weights);
}

torch::optim::Optimizer& Model::optimizer() { return impl_->engine().optimizer(); }

torch::Device Model::device() const { return impl_->engine().device(); }

void Model::summary() const { summary(std::cout); }

void Model::summary(std::ostream& out) const { impl_->summary(out); }

}  // namespace tnt
