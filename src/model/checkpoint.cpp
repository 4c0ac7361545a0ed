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
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <optional>
#include <sstream>
#include <tuple>

#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/runtime/runtime.h>

#include <nlohmann/json.hpp>

#include <tarantella/model/checkpoints.h>

#include "io/atomic_file.h"
#include "io/pickle_rewrite.h"
#include "io/torch_save.h"
#include "model/model_impl.h"

#include "dp/optimizer_shards.h"

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

torch::Tensor cpu_rng_state() {
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(generator.mutex());
  return generator.get_state();
}

void set_cpu_rng_state(const torch::Tensor& state) {
  at::Generator generator = at::detail::getDefaultCPUGenerator();  // shares the state
  std::lock_guard<std::mutex> lock(generator.mutex());
  generator.set_state(state);
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

  // A finite positive number.
  double positive(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isDouble()) wrong(key, detail::kind_of(v), "a float");
    if (!(v.toDouble() > 0) || !std::isfinite(v.toDouble())) {
      wrong(key, std::to_string(v.toDouble()), "a finite number > 0");
    }
    return v.toDouble();
  }

  // A 1-D int64 tensor's values.
  std::vector<std::int64_t> integers(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isTensor()) wrong(key, detail::kind_of(v), "an int64 tensor");
    const torch::Tensor t = v.toTensor();
    if (t.scalar_type() != torch::kInt64 || t.dim() != 1) {
      wrong(key, detail::concat("a ", c10::toString(t.scalar_type()), " tensor of shape ", t.sizes()),
            "a 1-D int64 tensor");
    }
    const torch::Tensor c = t.contiguous();
    return std::vector<std::int64_t>(c.data_ptr<std::int64_t>(), c.data_ptr<std::int64_t>() + c.numel());
  }

  // A 1-D float64 tensor's values.
  std::vector<double> doubles(const char* key) const {
    const c10::IValue v = get(key);
    if (!v.isTensor()) wrong(key, detail::kind_of(v), "a float64 tensor");
    const torch::Tensor t = v.toTensor();
    if (t.scalar_type() != torch::kFloat64 || t.dim() != 1) {
      wrong(key, detail::concat("a ", c10::toString(t.scalar_type()), " tensor of shape ", t.sizes()),
            "a 1-D float64 tensor");
    }
    const torch::Tensor c = t.contiguous();
    return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
  }

  std::string bytes(const char* key) const {
    const torch::Tensor t = byte_tensor(key);
    return std::string(static_cast<const char*>(t.data_ptr()), static_cast<std::size_t>(t.numel()));
  }

  /// The entries among `keys` that are present, as a dict of their own.
  Entries subset(std::initializer_list<const char*> keys) const {
    c10::impl::GenericDict out(c10::StringType::get(), c10::AnyType::get());
    for (const char* key : keys) {
      if (has(key)) out.insert(key, get(key));
    }
    return Entries(out, path_);
  }
  const c10::impl::GenericDict& all() const { return dict_; }
  const std::string& path() const { return path_; }

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

// The small entries the master read and checked (counters, random state,
// loss scale, a backup's position), on every rank: one pickled dict sent
// as one string broadcast, so every value travels by name and no length
// is sent by hand. `master` is set on the group's master only. Collective.
Entries broadcast_entries(const comm::ProcessGroup& group, const std::optional<Entries>& master,
                          const std::string& path) {
  std::string bytes;
  if (group.is_master()) {
    const std::vector<char> pickled = torch::pickle_save(master->all());
    bytes.assign(pickled.begin(), pickled.end());
  }
  bytes = group.broadcast_string(bytes);
  if (group.is_master()) return *master;
  const torch::IValue value = torch::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  return Entries(value.toGenericDict(), path);
}

// The CPU generator's state from a checkpoint, checked to be one.
torch::Tensor rng_state(const Entries& entries, const std::string& path) {
  const torch::Tensor rng = entries.byte_tensor("rng_state");
  const std::int64_t expected = cpu_rng_state().numel();
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

namespace {

// The optimizer's bytes for a checkpoint, in full form. A sharded
// optimizer's are gathered from every rank (collective); otherwise the
// master alone serializes them later (nullopt).
std::optional<std::string> gather_optimizer_bytes(const Model& model) {
  train::Engine& s = ModelInternals::of(model);
  if (!s.shards()) return std::nullopt;
  return s.shards()->full_state_bytes();
}

// The entries of a Model::save file; `gathered` from gather_optimizer_bytes.
c10::impl::GenericDict checkpoint_entries(const Model& model,
                                          const std::optional<std::string>& gathered) {
  const train::Engine& s = ModelInternals::of(model);
  c10::Dict<std::string, torch::Tensor> weights;
  for (const auto& [name, t] : model.named_parameters()) weights.insert(name, t.detach().cpu().contiguous());
  for (const auto& [name, t] : model.named_buffers()) weights.insert(name, t.detach().cpu().contiguous());
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kFormat));
  dict.insert("weights", weights);
  dict.insert("epochs_done", s.counters().epochs_done);
  dict.insert("optimizer_steps", s.counters().optimizer_steps);
  dict.insert("rng_state", cpu_rng_state());
  if (s.is_compiled()) {
    dict.insert("optimizer", to_bytes(gathered ? *gathered : optimizer_bytes(s.optimizer())));
  }
  const std::string architecture = s.net().config_json();
  if (!architecture.empty()) dict.insert("architecture", architecture);
  const std::string torchscript = s.net().torchscript_bytes();
  if (!torchscript.empty()) dict.insert("torchscript", to_bytes(torchscript));
  if (s.is_compiled()) dict.insert("compile", model.get_compile_config().dump());
  if (s.counters().deterministic_seed) {
    dict.insert("deterministic_seed", static_cast<std::int64_t>(*s.counters().deterministic_seed));
    std::vector<std::int64_t> exponents(s.counters().deterministic_exponents.begin(), s.counters().deterministic_exponents.end());
    dict.insert("deterministic_exponents", torch::tensor(exponents, torch::kInt64));
  }
  if (s.scaler()) {
    dict.insert("loss_scale", s.scaler()->scale());
    dict.insert("loss_scale_good_steps", s.scaler()->good_steps());
    dict.insert("skipped_steps", s.scaler()->skipped());
  }
  return dict;
}

}  // namespace

void Model::save(const std::string& path, bool all_ranks) const {
  train::Engine& s = *impl_->engine;
  const std::optional<std::string> gathered = gather_optimizer_bytes(*this);
  auto write = [&] {
    write_atomically(path, torch_save_bytes(checkpoint_entries(*this, gathered)));
  };
  if (all_ranks) {
    write();
    s.group().barrier();
    return;
  }
  run_on_master_checked(s.group(), write);
}

std::int64_t Model::load(const std::string& path) {
  train::Engine& s = *impl_->engine;
  s.require_compiled("load()");
  // The file holds the full optimizer state: load it in full form; the
  // next fit() shards it again.
  s.unshard_optimizer();
  std::optional<Entries> small;
  run_on_master_checked(s.group(), [&] {
    // Every entry is checked before anything changes. If the weights do not
    // fit after the optimizer state was loaded, the old state is put back.
    const Entries entries = read_checkpoint(path);
    const auto weights = entries.dict("weights");
    const std::string optimizer = entries.bytes("optimizer");
    entries.count("epochs_done");
    entries.count("optimizer_steps");
    rng_state(entries, path);
    // Optional: the state of deterministic mode and of loss scaling.
    if (entries.has("deterministic_seed")) {
      entries.count("deterministic_seed");
      entries.integers("deterministic_exponents");
    }
    if (entries.has("loss_scale")) {
      entries.positive("loss_scale");
      entries.count("loss_scale_good_steps");
      entries.count("skipped_steps");
    }
    const std::string previous = optimizer_bytes(s.optimizer());
    load_optimizer_state(s.optimizer(), optimizer, path);
    try {
      copy_weights(*this, weights, path);  // checks every entry before it copies one
    } catch (...) {
      load_optimizer_state(s.optimizer(), previous, path);
      throw;
    }
    small = entries.subset({"epochs_done", "optimizer_steps", "rng_state", "deterministic_seed",
                            "deterministic_exponents", "loss_scale", "loss_scale_good_steps",
                            "skipped_steps"});
  });
  s.synchronize_state();  // weights, buffers and optimizer state to all ranks
  const Entries e = broadcast_entries(s.group(), small, path);
  set_cpu_rng_state(e.byte_tensor("rng_state"));
  train::Counters& c = s.counters();
  if (e.has("deterministic_seed")) {
    c.deterministic_seed = static_cast<std::uint64_t>(e.count("deterministic_seed"));
    const std::vector<std::int64_t> exponents = e.integers("deterministic_exponents");
    c.deterministic_exponents.assign(exponents.begin(), exponents.end());
  }
  if (e.has("loss_scale") && s.scaler()) {
    s.scaler()->restore(e.positive("loss_scale"), e.count("loss_scale_good_steps"),
                        e.count("skipped_steps"));
  }
  c.epochs_done = e.count("epochs_done");
  c.optimizer_steps = e.count("optimizer_steps");
  return c.epochs_done;
}

std::int64_t Model::epochs_done() const { return impl_->engine->counters().epochs_done; }


std::string latest_checkpoint(const std::string& dir) {
  return latest_checkpoint(dir, default_group());
}

namespace {

// The checkpoints of `dir`, newest first (see latest_checkpoint); the master
// looks, every rank gets the list.
std::vector<std::string> checkpoints_newest_first(const std::string& dir,
                                                  const comm::ProcessGroup& group) {
  // (has a number, the first number, name): the largest is the newest.
  using Key = std::tuple<bool, std::int64_t, std::string>;
  std::vector<std::pair<Key, std::string>> found;
  run_on_master_checked(group, [&] {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) return;
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
      found.push_back({Key{digit != std::string::npos, number, name}, entry.path().string()});
    }
  });
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string joined;  // paths cannot hold '\n' here: directory entries of a listing
  for (const auto& [key, path] : found) joined += path + "\n";
  joined = group.broadcast_string(joined);
  std::vector<std::string> paths;
  for (std::size_t begin = 0, end; (end = joined.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    paths.push_back(joined.substr(begin, end - begin));
  }
  return paths;
}

}  // namespace

std::string latest_checkpoint(const std::string& dir, const comm::ProcessGroup& group) {
  const std::vector<std::string> paths = checkpoints_newest_first(dir, group);
  return paths.empty() ? std::string() : paths.front();
}

std::string load_latest_checkpoint(Model& model, const std::string& dir) {
  const std::vector<std::string> paths = checkpoints_newest_first(dir, ModelInternals::of(model).group());
  std::string failures;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    try {
      model.load(paths[i]);  // checks the whole file before it changes the model
      return paths[i];
    } catch (const Error& e) {
      // The reason without the "[tarantella rank R] " of the error's text.
      std::string reason = e.what();
      if (reason.rfind("[tarantella rank ", 0) == 0) reason.erase(0, reason.find("] ") + 2);
      const std::string next = i + 1 < paths.size() ? "trying the older '" + paths[i + 1] + "'"
                                                    : "no older checkpoint is left";
      log::warning(
          fmt::format("checkpoint '{}' cannot be loaded ({}); {}", paths[i], reason, next));
      failures += fmt::format("\n  {}: {}", paths[i], reason);
    }
  }
  TNT_CHECK(paths.empty(), "none of the ", paths.size(), " checkpoints in '", dir,
            "' can be loaded:", failures,
            "\nremove the damaged files, or start without resuming");
  return {};
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
  train::Engine& s = ModelInternals::of(model);
  std::optional<Entries> small;
  run_on_master_checked(s.group(), [&] {
    const Entries entries = read_checkpoint(path);
    entries.count("epochs_done");
    copy_weights(model, entries.dict("weights"), path);
    small = entries.subset({"epochs_done"});
  });
  s.synchronize_state();
  s.counters().epochs_done = broadcast_entries(s.group(), small, path).count("epochs_done");
}

void save_backup(const Model& model, const std::string& path, const TrainingPosition& position) {
  const train::Engine& s = ModelInternals::of(model);
  // Every rank's generator: dropout and augmentation draw on each rank.
  const torch::Tensor rng_states = s.group().allgather(cpu_rng_state());
  const std::optional<std::string> gathered = gather_optimizer_bytes(model);
  run_on_master_checked(s.group(), [&] {
    c10::impl::GenericDict dict = checkpoint_entries(model, gathered);
    dict.insert("backup_epoch", position.epoch);
    dict.insert("backup_step", position.step);
    dict.insert("backup_state", torch::tensor(position.state, torch::kFloat64));
    dict.insert("backup_global_batch_size", position.global_batch_size);
    dict.insert("backup_ranks", static_cast<std::int64_t>(s.group().size()));
    dict.insert("backup_rng_states", rng_states);
    write_atomically(path, torch_save_bytes(dict));
  });
}

TrainingPosition restore_backup(Model& model, const std::string& path) {
  train::Engine& s = ModelInternals::of(model);
  model.load(path);  // weights, optimizer, counters, the master's random state
  const std::int64_t each = cpu_rng_state().numel();
  std::optional<Entries> small;
  run_on_master_checked(s.group(), [&] {
    const Entries entries = read_checkpoint(path);
    const std::vector<double> state = entries.doubles("backup_state");
    entries.count("backup_epoch");
    entries.count("backup_step");
    entries.count("backup_global_batch_size");
    const std::int64_t ranks = entries.count("backup_ranks");
    const torch::Tensor rng_states = entries.byte_tensor("backup_rng_states");
    TNT_CHECK(ranks >= 1 && rng_states.numel() == ranks * each, "backup '", path,
              "': entry 'backup_rng_states' has ", rng_states.numel(), " bytes for ", ranks,
              " ranks, expected ", each, " per rank: the file is damaged");
    // A backup at an epoch's end (step 0) has no epoch in progress: no state.
    const bool epoch_end = entries.count("backup_step") == 0 && state.empty();
    TNT_CHECK(epoch_end || static_cast<std::int64_t>(state.size()) == s.state_size(), "backup '",
              path, "' holds ", state.size(), " loss/metric values, this model has ",
              s.state_size(), ": compile with the loss and metrics of the run that made it");
    small = entries.subset({"backup_state", "backup_epoch", "backup_step",
                            "backup_global_batch_size", "backup_ranks", "backup_rng_states"});
  });
  const Entries e = broadcast_entries(s.group(), small, path);
  TrainingPosition position;
  position.state = e.doubles("backup_state");
  position.epoch = e.count("backup_epoch");
  position.step = e.count("backup_step");
  position.global_batch_size = e.count("backup_global_batch_size");
  position.ranks = e.count("backup_ranks");
  // The same rank count: each rank continues with its own generator; another
  // count has no such correspondence, and every rank takes the master's.
  const std::int64_t row = position.ranks == s.group().size() ? s.group().rank() : 0;
  set_cpu_rng_state(e.byte_tensor("backup_rng_states").narrow(0, row * each, each).clone());
  return position;
}

}  // namespace tnt

namespace tnt {

void Model::Impl::save_backup(const std::string& path) {
  ::tnt::save_backup(*self, path, engine->position());
}

TrainingPosition Model::Impl::restore_backup(const std::string& path) {
  return ::tnt::restore_backup(*self, path);
}

}  // namespace tnt
