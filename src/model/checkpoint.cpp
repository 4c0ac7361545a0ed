// Whole-model checkpoints: one torch.save-format file holding a dict
//   format: "tarantella-checkpoint-1"
//   weights: {name: tensor}      (parameters and buffers)
//   optimizer: uint8 tensor      (torch::optim's own serialization; if compiled)
//   epochs_done, optimizer_steps: int
//   rng_state: uint8 tensor      (the default CPU generator)
//   architecture: str            (Model::to_json(), layer-registry models)
//   torchscript: uint8 tensor    (the module's bytes, TorchScript models)
//   compile: str                 (Model::get_compile_config(), if compiled)
// so that training stopped after epoch k and resumed from the file with
// initial_epoch = k ends bitwise equal to an uninterrupted run.
#include <filesystem>
#include <mutex>
#include <sstream>
#include <tuple>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include <nlohmann/json.hpp>

#include <tarantella/model/checkpoints.h>

#include "io/atomic_file.h"
#include "io/pickle_rewrite.h"
#include "io/torch_save.h"
#include "model/model_impl.h"

namespace tnt {
namespace {

constexpr const char* kFormat = "tarantella-checkpoint-1";

torch::Tensor to_bytes(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<std::int64_t>(s.size())},
                          torch::kUInt8)
      .clone();
}

std::string optimizer_bytes(torch::optim::Optimizer& optimizer) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  std::ostringstream out;
  archive.save_to(out);
  return out.str();
}

// The entries of a checkpoint, each checked for presence and type before it
// is used; errors name the file and the entry.
class Entries {
 public:
  Entries(c10::impl::GenericDict dict, std::string path)
      : dict_(std::move(dict)), path_(std::move(path)) {}

  bool has(const char* key) const { return dict_.find(key) != dict_.end(); }

  c10::IValue get(const char* key) const {
    auto it = dict_.find(key);
    TNT_CHECK(it != dict_.end(), "checkpoint '", path_, "' has no '", key,
              "' entry: it is not a file written by tnt::Model::save");
    return it->value();
  }

  std::string str(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isString()) wrong(key, detail::kind_of(v), "a str");
    return v.toStringRef();
  }

  // A count of epochs or steps.
  std::int64_t count(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isInt()) wrong(key, detail::kind_of(v), "an int");
    if (v.toInt() < 0) wrong(key, std::to_string(v.toInt()), "a count >= 0");
    return v.toInt();
  }

  c10::impl::GenericDict dict(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isGenericDict()) wrong(key, detail::kind_of(v), "a dict");
    return v.toGenericDict();
  }

  // Bytes stored as a 1-D uint8 tensor (optimizer state, RNG state, TorchScript).
  torch::Tensor byte_tensor(const char* key) const {
    const char* expected = "a uint8 tensor (1-D, contiguous)";
    const c10::IValue v = get(key);
    if (!v.isTensor()) wrong(key, detail::kind_of(v), expected);
    const torch::Tensor t = v.toTensor();
    if (t.scalar_type() != torch::kUInt8) {
      wrong(key, fmt::format("a {} tensor", c10::toString(t.scalar_type())), expected);
    }
    if (t.dim() != 1 || !t.is_contiguous()) {
      wrong(key,
            detail::concat("a uint8 tensor of shape ", t.sizes(), " and strides ", t.strides()),
            expected);
    }
    return t;
  }

  std::string bytes(const char* key) const {
    const torch::Tensor t = byte_tensor(key);
    return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()));
  }

 private:
  [[noreturn]] void wrong(const char* key, const std::string& is, const char* expected) const {
    detail::throw_error(
        fmt::format("checkpoint '{}': entry '{}' is {}, expected {} (the file is "
                    "damaged or was not written by tnt::Model::save)",
                    path_, key, is, expected));
  }

  c10::impl::GenericDict dict_;
  std::string path_;
};

// The entries of a Model::save file (master rank only).
Entries read_checkpoint(const std::string& path) {
  const torch::IValue value = load_torch_save_file(path);
  TNT_CHECK(value.isGenericDict(), "'", path, "' holds ", detail::kind_of(value),
            ", not a tarantella checkpoint (a dict)");
  Entries entries(value.toGenericDict(), path);
  TNT_CHECK(entries.str("format") == kFormat, "'", path,
            "' has an unknown checkpoint format: write it with tnt::Model::save");
  return entries;
}

// The CPU generator's state from a checkpoint, checked to be one.
torch::Tensor rng_state(const Entries& entries, const std::string& path) {
  const torch::Tensor rng = entries.byte_tensor("rng_state");
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::int64_t expected = 0;
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    expected = generator.get_state().numel();
  }
  TNT_CHECK(rng.numel() == expected, "checkpoint '", path, "': entry 'rng_state' has ", rng.numel(),
            " bytes, expected ", expected,
            " (the state of LibTorch's CPU generator): the file is damaged");
  return rng;
}

void load_optimizer_state(torch::optim::Optimizer& optimizer, const std::string& bytes,
                          const std::string& path) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(in);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("checkpoint '{}': entry 'optimizer' is not a readable optimizer "
                    "state (the file is damaged): {}",
                    path, std::string(e.what()).substr(0, 200)));
  }
  try {
    optimizer.load(archive);
  } catch (const std::exception& e) {
    throw Error(
        fmt::format("the optimizer state in '{}' does not fit this model's optimizer "
                    "(compile with the optimizer it was saved with): {}",
                    path, std::string(e.what()).substr(0, 200)));
  }
}

}  // namespace

void Model::save(const std::string& path, bool all_ranks) const {
  Impl& s = *impl_;
  auto write = [&] {
    c10::Dict<std::string, torch::Tensor> weights;
    for (const auto& [name, t] : named_parameters()) weights.insert(name, t.detach().cpu().contiguous());
    for (const auto& [name, t] : named_buffers()) weights.insert(name, t.detach().cpu().contiguous());
    c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
    dict.insert("format", std::string(kFormat));
    dict.insert("weights", weights);
    dict.insert("epochs_done", s.epochs_done);
    dict.insert("optimizer_steps", s.optimizer_steps);
    {
      at::Generator generator = at::detail::getDefaultCPUGenerator();
      std::lock_guard<std::mutex> lock(generator.mutex());
      dict.insert("rng_state", generator.get_state());
    }
    if (s.optimizer) dict.insert("optimizer", to_bytes(optimizer_bytes(*s.optimizer)));
    const std::string architecture = s.net->config_json();
    if (!architecture.empty()) dict.insert("architecture", architecture);
    const std::string torchscript = s.net->torchscript_bytes();
    if (!torchscript.empty()) dict.insert("torchscript", to_bytes(torchscript));
    if (s.options) dict.insert("compile", get_compile_config().dump());
    write_atomically(path, torch::pickle_save(dict));
  };
  if (all_ranks) {
    write();
    s.group.barrier();
    return;
  }
  run_on_master_checked(s.group, write);
}

std::int64_t Model::load(const std::string& path) {
  Impl& s = *impl_;
  s.require_compiled("load()");
  torch::Tensor counters = torch::zeros({2}, torch::kInt64);
  torch::Tensor rng;
  run_on_master_checked(s.group, [&] {
    // Every entry is checked before anything changes. If the weights do not
    // fit after the optimizer state was loaded, the old state is put back.
    const Entries entries = read_checkpoint(path);
    const auto weights = entries.dict("weights");
    const std::string optimizer = entries.bytes("optimizer");
    const std::int64_t epochs_done = entries.count("epochs_done");
    const std::int64_t optimizer_steps = entries.count("optimizer_steps");
    const torch::Tensor state = rng_state(entries, path);
    const std::string previous = optimizer_bytes(*s.optimizer);
    load_optimizer_state(*s.optimizer, optimizer, path);
    try {
      copy_weights(*this, weights, path);  // checks every entry before it copies one
    } catch (...) {
      load_optimizer_state(*s.optimizer, previous, path);
      throw;
    }
    counters[0] = epochs_done;
    counters[1] = optimizer_steps;
    rng = state;
  });
  s.synchronize_state();  // weights, buffers and optimizer state to all ranks
  s.group.broadcast(counters);
  torch::Tensor rng_size = torch::tensor({rng.defined() ? rng.numel() : 0});
  s.group.broadcast(rng_size);
  if (!rng.defined()) rng = torch::empty({rng_size.item<std::int64_t>()}, torch::kUInt8);
  s.group.broadcast(rng);
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the state
  {
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(rng);
  }
  s.epochs_done = counters[0].item<std::int64_t>();
  s.optimizer_steps = counters[1].item<std::int64_t>();
  return s.epochs_done;
}

std::int64_t Model::epochs_done() const { return impl_->epochs_done; }


std::string latest_checkpoint(const std::string& dir) {
  return latest_checkpoint(dir, default_group());
}

std::string latest_checkpoint(const std::string& dir, const comm::ProcessGroup& group) {
  std::string newest;
  run_on_master_checked(group, [&] {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) return;
    // (has a number, the first number, name): the largest wins.
    std::tuple<bool, std::int64_t, std::string> best{false, -1, ""};
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (!entry.is_regular_file(error)) continue;
      const std::string name = entry.path().filename().string();
      if (name.size() < 3 || name.compare(name.size() - 3, 3, ".pt") != 0) continue;
      const auto digit = name.find_first_of("0123456789");
      std::int64_t number = -1;
      if (digit != std::string::npos) {
        const auto end = name.find_first_not_of("0123456789", digit);
        number = std::stoll(name.substr(digit, std::min<std::size_t>(end - digit, 18)));
      }
      std::tuple<bool, std::int64_t, std::string> key{digit != std::string::npos, number, name};
      if (newest.empty() || key > best) {
        best = key;
        newest = entry.path().string();
      }
    }
  });
  return group.broadcast_string(newest);
}

SavedModelDescription read_saved_model_description(const comm::ProcessGroup& group,
                                                   const std::string& path) {
  SavedModelDescription d;
  run_on_master_checked(group, [&] {
    const Entries entries = read_checkpoint(path);
    if (entries.has("architecture")) d.architecture = entries.str("architecture");
    if (entries.has("compile")) d.compile = entries.str("compile");
    if (entries.has("torchscript")) d.torchscript = entries.bytes("torchscript");
  });
  d.architecture = group.broadcast_string(d.architecture);
  d.torchscript = group.broadcast_string(d.torchscript);
  d.compile = group.broadcast_string(d.compile);
  return d;
}

void load_checkpoint_weights(Model& model, const std::string& path) {
  Model::Impl& s = ModelInternals::of(model);
  torch::Tensor epochs = torch::zeros({1}, torch::kInt64);
  run_on_master_checked(s.group, [&] {
    const Entries entries = read_checkpoint(path);
    const std::int64_t epochs_done = entries.count("epochs_done");
    copy_weights(model, entries.dict("weights"), path);
    epochs[0] = epochs_done;
  });
  s.synchronize_state();
  s.group.broadcast(epochs);
  s.epochs_done = epochs[0].item<std::int64_t>();
}

}  // namespace tnt
