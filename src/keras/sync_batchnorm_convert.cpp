// convert_sync_batchnorm: BatchNorm layers of a module tree replaced by
// their synchronized equivalents.
//
// Why only inside containers (see the header): a C++ module calls its
// children through its own members, which the converter cannot reach, and
// BatchNorm's forward() is not virtual, so the old object cannot be made to
// behave differently either. Containers call what they store, and their
// storage can be updated in place: torch::nn::Sequential (its AnyModules),
// ModuleList and ModuleDict (their shared_ptrs), tnt::layers::Sequential
// (replace()). The registered child is replaced too, so parameters(),
// state dicts and tnt::Model see the new layer.
//
// Two passes: the first finds every BatchNorm and checks that it can be
// replaced; only if all can does the second change anything.
#include <tarantella/keras/sync_batchnorm.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/keras/layers.h>

namespace tnt::nn {
namespace {

// A BatchNorm found in the tree: its parent, its name there, and how to
// build the replacement.
struct SbnReplacement {
  torch::nn::Module* parent;
  std::string key;   // the child's registered name in `parent`
  std::string path;  // for messages: "layer1.0.bn1"
  std::shared_ptr<torch::nn::Module> old_module;
  std::function<std::shared_ptr<torch::nn::Module>()> make;
};

template <typename Impl>
SyncBatchNormOptions sbn_options_of(const Impl& bn) {
  const auto& o = bn.options;
  std::optional<double> momentum;  // c10::optional in LibTorch 1.13
  if (o.momentum()) momentum = *o.momentum();
  return SyncBatchNormOptions(o.num_features())
      .eps(o.eps())
      .momentum(momentum)
      .affine(o.affine())
      .track_running_stats(o.track_running_stats());
}

// Copies the values (and trainability) of every parameter and buffer of
// `from` into the same-named one of `to`.
void sbn_copy_state(const torch::nn::Module& from, torch::nn::Module& to) {
  torch::NoGradGuard no_grad;
  auto params = to.named_parameters(/*recurse=*/false);
  for (const auto& item : from.named_parameters(/*recurse=*/false)) {
    torch::Tensor* target = params.find(item.key());
    if (target == nullptr || !item.value().defined() || !target->defined()) continue;
    target->copy_(item.value());
    target->set_requires_grad(item.value().requires_grad());
  }
  auto buffers = to.named_buffers(/*recurse=*/false);
  for (const auto& item : from.named_buffers(/*recurse=*/false)) {
    torch::Tensor* target = buffers.find(item.key());
    if (target == nullptr || !item.value().defined() || !target->defined()) continue;
    target->copy_(item.value());
  }
}

// Where the old layer's tensors live (the new one goes there too).
torch::Device sbn_device_of(const torch::nn::Module& m) {
  for (const auto& item : m.named_parameters(/*recurse=*/false)) {
    if (item.value().defined()) return item.value().device();
  }
  for (const auto& item : m.named_buffers(/*recurse=*/false)) {
    if (item.value().defined()) return item.value().device();
  }
  return torch::kCPU;
}

template <typename Impl>
std::function<std::shared_ptr<torch::nn::Module>()> sbn_from_torch(
    const std::shared_ptr<torch::nn::Module>& child, const comm::ProcessGroup& group) {
  if (dynamic_cast<Impl*>(child.get()) == nullptr) return nullptr;
  return [child, group] {
    const auto& bn = dynamic_cast<const Impl&>(*child);
    auto sync = std::make_shared<SyncBatchNormImpl>(sbn_options_of(bn), group);
    sync->train(bn.is_training());
    sbn_copy_state(bn, *sync);
    sync->to(sbn_device_of(bn));
    return std::static_pointer_cast<torch::nn::Module>(sync);
  };
}

// The registry's BatchNorm (Keras momentum) becomes the registry's
// SyncBatchNorm, so that the architecture still round-trips through JSON.
std::function<std::shared_ptr<torch::nn::Module>()> sbn_from_registry(
    const std::shared_ptr<torch::nn::Module>& child, const comm::ProcessGroup& group) {
  auto* layer = dynamic_cast<layers::LayerImpl*>(child.get());
  if (layer == nullptr || layer->class_name() != "BatchNorm") return nullptr;
  return [child, group] {
    const auto& bn = dynamic_cast<const layers::LayerImpl&>(*child);
    const auto config = bn.get_config();
    layers::Layer sync =
        layers::layer_from_config({{"class_name", "SyncBatchNorm"}, {"config", config}});
    if (!group.valid()) {
      // nothing to set: the model's group, or the world group
    } else if (auto* c = dynamic_cast<CollectiveModule*>(sync.get())) {
      c->set_process_group(group);
    }
    sync->train(bn.is_training());
    sbn_copy_state(bn, *sync);
    sync->to(sbn_device_of(bn));
    return std::static_pointer_cast<torch::nn::Module>(sync);
  };
}

std::function<std::shared_ptr<torch::nn::Module>()> sbn_factory(
    const std::shared_ptr<torch::nn::Module>& child, const comm::ProcessGroup& group) {
  if (auto f = sbn_from_torch<torch::nn::BatchNorm1dImpl>(child, group)) return f;
  if (auto f = sbn_from_torch<torch::nn::BatchNorm2dImpl>(child, group)) return f;
  if (auto f = sbn_from_torch<torch::nn::BatchNorm3dImpl>(child, group)) return f;
  return sbn_from_registry(child, group);
}

bool sbn_is_container(const torch::nn::Module& m) {
  return dynamic_cast<const torch::nn::SequentialImpl*>(&m) != nullptr ||
         dynamic_cast<const torch::nn::ModuleListImpl*>(&m) != nullptr ||
         dynamic_cast<const torch::nn::ModuleDictImpl*>(&m) != nullptr ||
         dynamic_cast<const layers::SequentialImpl*>(&m) != nullptr;
}

void sbn_collect(torch::nn::Module* parent, const std::string& prefix,
                 const comm::ProcessGroup& group, std::vector<SbnReplacement>& found) {
  for (const auto& item : parent->named_children()) {
    const std::string path = prefix.empty() ? item.key() : prefix + "." + item.key();
    if (auto make = sbn_factory(item.value(), group)) {
      TNT_CHECK(sbn_is_container(*parent), "convert_sync_batchnorm: '", path, "' (",
                item.value()->name(), ") is registered directly in '",
                prefix.empty() ? "the root module" : prefix, "' (", parent->name(),
                "), whose forward() calls it through a member the converter cannot re-point "
                "(C++ has no attribute lookup): declare that member as tnt::nn::SyncBatchNorm "
                "(same options, same parameter names), or keep the BatchNorm in a "
                "torch::nn::Sequential/ModuleList/ModuleDict; nothing was converted");
      found.push_back({parent, item.key(), path, item.value(), std::move(make)});
    } else {
      sbn_collect(item.value().get(), path, group, found);
    }
  }
}

// Points the container's own storage at the new module (the registered
// child is replaced by the caller).
void sbn_replace_in_container(torch::nn::Module& parent, const std::string& key,
                              const std::shared_ptr<torch::nn::Module>& old_module,
                              const std::shared_ptr<torch::nn::Module>& fresh) {
  if (auto* seq = dynamic_cast<torch::nn::SequentialImpl*>(&parent)) {
    for (auto& any : *seq) {
      if (any.ptr() == old_module) {
        if (auto sync = std::dynamic_pointer_cast<SyncBatchNormImpl>(fresh)) {
          any = torch::nn::AnyModule(sync);
        } else {
          any = torch::nn::AnyModule(std::dynamic_pointer_cast<layers::LayerImpl>(fresh));
        }
      }
    }
  } else if (auto* list = dynamic_cast<torch::nn::ModuleListImpl*>(&parent)) {
    for (auto& m : *list) {
      if (m == old_module) m = fresh;
    }
  } else if (auto* dict = dynamic_cast<torch::nn::ModuleDictImpl*>(&parent)) {
    for (auto& item : *dict) {
      if (item.value() == old_module) item.value() = fresh;
    }
  } else if (auto* registry = dynamic_cast<layers::SequentialImpl*>(&parent)) {
    registry->replace(static_cast<std::size_t>(std::stoul(key)),
                      std::dynamic_pointer_cast<layers::LayerImpl>(fresh));
  }
}

}  // namespace

std::size_t convert_sync_batchnorm(torch::nn::Module& module, comm::ProcessGroup group) {
  const bool is_batchnorm = dynamic_cast<torch::nn::BatchNorm1dImpl*>(&module) != nullptr ||
                            dynamic_cast<torch::nn::BatchNorm2dImpl*>(&module) != nullptr ||
                            dynamic_cast<torch::nn::BatchNorm3dImpl*>(&module) != nullptr ||
                            (dynamic_cast<layers::LayerImpl*>(&module) != nullptr &&
                             dynamic_cast<layers::LayerImpl&>(module).class_name() == "BatchNorm");
  TNT_CHECK(!is_batchnorm,
            "convert_sync_batchnorm: the module itself is a BatchNorm (", module.name(),
            "); convert the module that contains it, or build a tnt::nn::SyncBatchNorm");
  std::vector<SbnReplacement> found;
  sbn_collect(&module, "", group, found);
  for (const SbnReplacement& r : found) {
    const std::shared_ptr<torch::nn::Module> fresh = r.make();
    sbn_replace_in_container(*r.parent, r.key, r.old_module, fresh);
    r.parent->replace_module(r.key, fresh);
  }
  return found.size();
}

}  // namespace tnt::nn
