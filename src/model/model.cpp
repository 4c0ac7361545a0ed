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
  const auto& scaler = impl_->engine->scaler();
  return scaler ? scaler->scale() : 1.0;
}

std::int64_t Model::skipped_steps() const {
  const auto& scaler = impl_->engine->scaler();
  return scaler ? scaler->skipped() : 0;
}

Model::Model(std::shared_ptr<ModuleAdapter> adapter) : Model(std::move(adapter), default_group()) {}

Model::Model(std::shared_ptr<ModuleAdapter> adapter, comm::ProcessGroup group)
    : impl_(std::make_unique<Impl>(
          *this, std::make_unique<train::Engine>(
                     std::move(adapter), std::move(group),
                     // The facade resolves the run's configuration; the
                     // engine only takes explicit options.
                     train::EngineOptions::from_config(current_config())))) {}

const comm::ProcessGroup& Model::group() const { return impl_->engine->group(); }

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

void Model::compile(CompileOptions options) { impl_->engine->compile(std::move(options)); }

bool Model::is_compiled() const { return impl_->engine->is_compiled(); }

torch::Tensor Model::forward(const std::vector<torch::Tensor>& inputs) {
  std::vector<torch::Tensor> on_device;
  for (const auto& t : inputs) on_device.push_back(t.to(device()));
  return impl_->engine->run(on_device);
}

NamedTensorList Model::named_parameters() const { return impl_->engine->net().named_parameters(); }
NamedTensorList Model::named_buffers() const { return impl_->engine->net().named_buffers(); }

std::vector<torch::Tensor> Model::get_weights() const {
  std::vector<torch::Tensor> out;
  for (const auto& [name, t] : named_parameters()) out.push_back(t.detach().clone());
  for (const auto& [name, t] : named_buffers()) out.push_back(t.detach().clone());
  return out;
}

void Model::set_weights(const std::vector<torch::Tensor>& weights) {
  NamedTensorList all = named_parameters();
  for (auto& b : named_buffers()) all.push_back(b);
  TNT_CHECK(weights.size() == all.size(), "set_weights() got ", weights.size(),
            " tensors, the model has ", all.size(), " (parameters, then buffers)");
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < all.size(); ++i) {
    TNT_CHECK(weights[i].sizes() == all[i].second.sizes(), "set_weights(): tensor ", i, " ('",
              all[i].first, "') has shape ", weights[i].sizes(), ", the model's has ",
              all[i].second.sizes());
    all[i].second.copy_(weights[i]);
  }
  impl_->engine->synchronize_state();
}

torch::optim::Optimizer& Model::optimizer() { return impl_->engine->optimizer(); }

torch::Device Model::device() const { return impl_->engine->device(); }

void Model::summary() const { summary(std::cout); }

void Model::summary(std::ostream& out) const {
  if (!group().is_master()) return;
  std::int64_t trainable = 0, frozen = 0;
  out << fmt::format("Model: {}\n{:<40} {:<20} {:>12}\n", impl_->engine->net().type_name(), "parameter",
                     "shape", "count");
  out << std::string(74, '-') << "\n";
  for (const auto& [name, p] : named_parameters()) {
    std::ostringstream shape;
    shape << p.sizes();
    out << fmt::format("{:<40} {:<20} {:>12}\n", name, shape.str(), p.numel());
    (p.requires_grad() ? trainable : frozen) += p.numel();
  }
  std::int64_t buffer_elements = 0;
  for (const auto& [name, b] : named_buffers()) buffer_elements += b.numel();
  out << std::string(74, '-') << "\n"
      << fmt::format("Trainable parameters: {}\nNon-trainable parameters: {}\nBuffer elements: {}\n",
                     trainable, frozen, buffer_elements);
}

}  // namespace tnt
