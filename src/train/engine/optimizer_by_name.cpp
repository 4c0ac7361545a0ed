// The optimizer's state by parameter name (optimizer_by_name.h).
#include "train/engine/optimizer_by_name.h"

#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/torch_compat.h>

#include "dp/optimizer_state.h"
#include "io/pickle_rewrite.h"

namespace tnt::train {
namespace {

const dp::StateKind& kind_of(const torch::optim::Optimizer& optimizer, const char* what) {
  const dp::StateKind* kind = dp::state_kind(optimizer);
  TNT_CHECK(kind != nullptr && kind->exactly(optimizer), what,
            ": the optimizer's state is kept by parameter name for the built-in optimizers (",
            dp::state_kind_names(), ") only; compile with one of them, or train with "
            "pipeline_stages=1");
  return *kind;
}

// The state of each parameter of `optimizer`'s groups, in group order,
// under `name_of`'s names.
NamedOptimizerState read_state(const torch::optim::Optimizer& optimizer,
                               const std::function<std::string(const torch::Tensor&)>& name_of,
                               const std::function<torch::Tensor(const torch::Tensor&)>& copy) {
  const dp::StateKind& kind = *dp::state_kind(optimizer);
  NamedOptimizerState out;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      ParamOptimizerState s;
      s.learning_rate = group.options().get_lr();
      const auto it = optimizer.state().find(compat::optimizer_state_key(p));
      if (it != optimizer.state().end()) {
        s.has_state = true;
        s.step = kind.step(*it->second);
        s.tensors = kind.tensors(*it->second);
        for (auto& t : s.tensors) {
          if (t.defined()) t = copy(t);
        }
      }
      out.emplace_back(name_of(p), std::move(s));
    }
  }
  return out;
}

}  // namespace

std::string optimizer_kind_name(const torch::optim::Optimizer& optimizer, const char* what) {
  return kind_of(optimizer, what).name;
}

NamedOptimizerState optimizer_state_by_name(
    const torch::optim::Optimizer& optimizer, const NamedTensorList& params,
    const std::function<torch::Tensor(const torch::Tensor&)>& copy) {
  kind_of(optimizer, "a checkpoint with pipeline stages");
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, t] : params) names[t.unsafeGetTensorImpl()] = name;
  return read_state(
      optimizer,
      [&](const torch::Tensor& p) {
        const auto it = names.find(p.unsafeGetTensorImpl());
        TNT_CHECK(it != names.end(), "the optimizer holds a tensor of shape ", p.sizes(),
                  " that is not one of the model's parameters: build it over the model's "
                  "parameters to save a checkpoint with pipeline stages");
        return it->second;
      },
      copy);
}

std::string optimizer_parameter_names(const torch::optim::Optimizer& optimizer,
                                      const NamedTensorList& params) {
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, t] : params) names[t.unsafeGetTensorImpl()] = name;
  std::string out;
  for (const auto& group : optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      const auto it = names.find(p.unsafeGetTensorImpl());
      if (it == names.end()) return {};
      out += it->second + '\n';
    }
  }
  return out;
}

NamedOptimizerState decode_optimizer_bytes(const torch::optim::Optimizer& like,
                                           const std::string& bytes,
                                           const std::vector<std::string>& names,
                                           const std::string& path) {
  const dp::StateKind& kind = kind_of(like, "loading a checkpoint into pipeline stages");
  // Placeholders stand for the unsplit model's parameters: torch::optim's
  // load maps the saved state onto its group's parameters by position.
  std::unique_ptr<torch::optim::Optimizer> whole = kind.empty_like(like);
  std::vector<torch::Tensor> placeholders;
  std::map<const void*, std::string> name_of;
  for (const auto& name : names) {
    placeholders.push_back(torch::empty({0}));
    name_of[placeholders.back().unsafeGetTensorImpl()] = name;
  }
  compat::add_param_group_exact(*whole, placeholders,
                                like.param_groups().at(0).options());
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in, torch::kCPU);
    whole->load(archive);
  } catch (const std::exception& e) {
    throw Error(fmt::format(
        "the optimizer state in '{}' does not fit this pipelined model: it was expected to be "
        "one parameter group over the {} trainable parameters of the whole model (an unsplit "
        "run's default optimizer); load it with pipeline_stages=1, or save it from a pipelined "
        "model: {}",
        path, names.size(), std::string(e.what()).substr(0, 200)));
  }
  return read_state(
      *whole, [&](const torch::Tensor& p) { return name_of.at(p.unsafeGetTensorImpl()); },
      [](const torch::Tensor& t) { return t; });
}

NamedTensorList to_named_tensors(const NamedOptimizerState& state) {
  NamedTensorList out;
  for (const auto& [name, s] : state) {
    out.emplace_back(name + "\tlr", torch::tensor({s.learning_rate}, torch::kFloat64));
    if (!s.has_state) continue;
    out.emplace_back(name + "\tstep", torch::tensor({s.step}, torch::kInt64));
    for (std::size_t i = 0; i < s.tensors.size(); ++i) {
      if (s.tensors[i].defined()) out.emplace_back(name + "\t" + std::to_string(i), s.tensors[i]);
    }
  }
  return out;
}

NamedOptimizerState from_named_tensors(const NamedTensorList& tensors) {
  NamedOptimizerState out;
  std::map<std::string, std::size_t> index;
  for (const auto& [key, t] : tensors) {
    const auto tab = key.find('\t');
    const std::string name = key.substr(0, tab), field = key.substr(tab + 1);
    auto it = index.find(name);
    if (it == index.end()) {
      it = index.emplace(name, out.size()).first;
      out.emplace_back(name, ParamOptimizerState{});
    }
    ParamOptimizerState& s = out[it->second].second;
    if (field == "lr") {
      s.learning_rate = t.item<double>();
    } else if (field == "step") {
      s.has_state = true;
      s.step = t.item<std::int64_t>();
    } else {
      const auto i = static_cast<std::size_t>(std::stoul(field));
      if (s.tensors.size() <= i) s.tensors.resize(i + 1);
      s.tensors[i] = t;
    }
  }
  return out;
}

c10::impl::GenericDict to_entry(const NamedOptimizerState& state) {
  c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
  for (const auto& [name, s] : state) {
    c10::impl::GenericDict one(c10::StringType::get(), c10::AnyType::get());
    one.insert("lr", s.learning_rate);
    if (s.has_state) {
      one.insert("step", s.step);
      for (std::size_t i = 0; i < s.tensors.size(); ++i) {
        if (s.tensors[i].defined()) one.insert(std::to_string(i), s.tensors[i]);
      }
    }
    out.insert(name, one);
  }
  return out;
}

NamedOptimizerState from_entry(const c10::impl::GenericDict& entry, const std::string& path) {
  const auto bad = [&](const std::string& name, const std::string& why) {
    detail::throw_error(fmt::format("checkpoint '{}': entry 'optimizer_by_name' of parameter "
                                    "'{}' {} (the file is damaged)",
                                    path, name, why));
  };
  NamedOptimizerState out;
  for (const auto& item : entry) {
    if (!item.key().isString() || !item.value().isGenericDict()) {
      bad(detail::kind_of(item.key()), "is not a dict under a name");
    }
    const std::string name = item.key().toStringRef();
    ParamOptimizerState s;
    for (const auto& field : item.value().toGenericDict()) {
      const std::string key = field.key().isString() ? field.key().toStringRef() : "?";
      const c10::IValue& v = field.value();
      if (key == "lr" && v.isDouble()) {
        s.learning_rate = v.toDouble();
      } else if (key == "step" && v.isInt()) {
        s.has_state = true;
        s.step = v.toInt();
      } else if (!key.empty() && key.find_first_not_of("0123456789") == std::string::npos &&
                 key.size() < 3 && v.isTensor()) {
        const auto i = static_cast<std::size_t>(std::stoul(key));
        if (s.tensors.size() <= i) s.tensors.resize(i + 1);
        s.tensors[i] = v.toTensor();
      } else {
        bad(name, fmt::format("has a field '{}' that is {}", key, detail::kind_of(v)));
      }
    }
    out.emplace_back(name, std::move(s));
  }
  return out;
}

std::function<void()> prepare_optimizer_state(torch::optim::Optimizer& optimizer,
                                              const NamedTensorList& params,
                                              const NamedOptimizerState& saved,
                                              const std::string& saved_kind,
                                              const std::string& path,
                                              const torch::Device& device) {
  const dp::StateKind& kind = kind_of(optimizer, "loading a checkpoint with pipeline stages");
  TNT_CHECK(saved_kind == kind.name, "the optimizer state in '", path, "' is ", saved_kind,
            "'s, this model's optimizer is ", kind.name,
            ": compile with the optimizer it was saved with");
  std::map<std::string, const ParamOptimizerState*> by_name;
  for (const auto& [name, s] : saved) by_name[name] = &s;
  std::unordered_map<const void*, std::string> names;
  for (const auto& [name, t] : params) names[t.unsafeGetTensorImpl()] = name;
  // (group, parameter, state or null), all checked before any is set.
  struct Change {
    std::size_t group;
    torch::Tensor param;
    const ParamOptimizerState* state;
  };
  std::vector<Change> changes;
  for (std::size_t g = 0; g < optimizer.param_groups().size(); ++g) {
    for (const auto& p : optimizer.param_groups()[g].params()) {
      const auto n = names.find(p.unsafeGetTensorImpl());
      TNT_CHECK(n != names.end(), "the optimizer holds a tensor of shape ", p.sizes(),
                " that is not one of the model's parameters: build it over the model's "
                "parameters to load a checkpoint with pipeline stages");
      const auto it = by_name.find(n->second);
      TNT_CHECK(it != by_name.end(), "the optimizer state in '", path,
                "' has no entry for parameter '", n->second,
                "': it was saved from a different model (or with that parameter frozen)");
      const ParamOptimizerState& s = *it->second;
      TNT_CHECK(s.tensors.size() <= kind.fields, "the optimizer state in '", path,
                "' of parameter '", n->second, "' has ", s.tensors.size(), " tensors, ",
                kind.name, " keeps ", kind.fields, ": the file is damaged");
      for (const auto& t : s.tensors) {
        TNT_CHECK(!t.defined() || t.sizes() == p.sizes(), "the optimizer state in '", path,
                  "' of parameter '", n->second, "' has shape ", t.sizes(),
                  ", the parameter's is ", p.sizes(), ": it was saved from a different model");
      }
      changes.push_back({g, p, &s});
    }
  }
  return [&optimizer, changes, &kind, device] {
    for (const auto& c : changes) {
      const auto key = compat::optimizer_state_key(c.param);
      optimizer.state().erase(key);
      if (c.state->has_state) {
        std::vector<torch::Tensor> tensors = c.state->tensors;
        tensors.resize(kind.fields);
        for (auto& t : tensors) {
          if (t.defined()) t = t.to(device, /*non_blocking=*/false, /*copy=*/true);
        }
        optimizer.state()[key] = kind.make(tensors, c.state->step);
      }
    }
    // Each group's learning rate: its first parameter's (a schedule may
    // have changed it since compile).
    std::vector<bool> set(optimizer.param_groups().size(), false);
    for (const auto& c : changes) {
      if (set[c.group]) continue;
      optimizer.param_groups()[c.group].options().set_lr(c.state->learning_rate);
      set[c.group] = true;
    }
  };
}

}  // namespace tnt::train
