// Persistence of the engine (see persistence.h): snapshots taken on every
// rank at a step boundary, files written from them by one rank, and loads
// that the master reads and checks before the engine changes.
#include "train/persist/persistence.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>

#include <fmt/format.h>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "io/atomic_file.h"
#include "train/step/metrics_accumulator.h"
#include "train/step/random_state.h"
#include "io/master_checked.h"
#include "io/pickle_rewrite.h"
#include "io/torch_save.h"
#include "train/persist/checkpoint_entries.h"

namespace tnt::train {
namespace {

c10::Dict<std::string, torch::Tensor> weight_dict(const NamedTensorList& weights) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& [name, t] : weights) dict.insert(name, t);
  return dict;
}

// A byte tensor over `s`'s memory, without a copy: `s` must outlive it.
torch::Tensor bytes_view(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<std::int64_t>(s.size())},
                          torch::kUInt8);
}

// The entries of a checkpoint file, in the order the format has always had.
// `optimizer` (the snapshot's optimizer bytes, see optimizer_bytes) is
// referenced, not copied.
c10::impl::GenericDict checkpoint_entries(const CheckpointSnapshot& snapshot,
                                          const std::optional<std::string>& optimizer) {
  const EngineSnapshot& s = snapshot.engine;
  c10::impl::GenericDict dict(c10::StringType::get(), c10::AnyType::get());
  dict.insert("format", std::string(kCheckpointFormat));
  dict.insert("weights", weight_dict(s.weights));
  dict.insert("epochs_done", s.counters.epochs_done);
  dict.insert("data_epochs", s.counters.data_epochs);
  dict.insert("optimizer_steps", s.counters.optimizer_steps);
  dict.insert("rng_state", snapshot.rng_state);
  if (snapshot.gpu_rng_state.numel() > 0) dict.insert("gpu_rng_state", snapshot.gpu_rng_state);
  if (optimizer) dict.insert("optimizer", bytes_view(*optimizer));
  if (optimizer && !s.optimizer_names.empty()) dict.insert("optimizer_names", s.optimizer_names);
  if (s.optimizer_by_name) {  // pipeline stages: the state by parameter name
    dict.insert("optimizer_by_name", *s.optimizer_by_name);
    dict.insert("optimizer_kind", s.optimizer_kind);
  }
  if (!s.architecture.empty()) dict.insert("architecture", s.architecture);
  if (!s.torchscript.empty()) dict.insert("torchscript", bytes_view(s.torchscript));
  if (!s.compile.empty()) dict.insert("compile", s.compile);
  if (s.counters.deterministic_seed) {
    dict.insert("deterministic_seed", static_cast<std::int64_t>(*s.counters.deterministic_seed));
    // By name (one per line), so that another layout of stages finds its own.
    std::vector<std::int64_t> exponents;
    std::string names;
    for (const auto& [name, e] : s.counters.deterministic_exponents) {
      exponents.push_back(e);
      names += name + '\n';
    }
    dict.insert("deterministic_exponents", torch::tensor(exponents, torch::kInt64));
    dict.insert("deterministic_exponent_names", names);
  }
  if (s.loss_scale) {
    dict.insert("loss_scale", s.loss_scale->scale);
    dict.insert("loss_scale_good_steps", s.loss_scale->good_steps);
    dict.insert("skipped_steps", s.loss_scale->skipped_steps);
  }
  if (const auto& b = snapshot.backup) {
    dict.insert("backup_epoch", b->position.epoch);
    dict.insert("backup_step", b->position.step);
    dict.insert("backup_state", torch::tensor(b->position.state, torch::kFloat64));
    dict.insert("backup_global_batch_size", b->position.global_batch_size);
    dict.insert("backup_ranks", b->ranks);
    dict.insert("backup_rng_states", b->rng_states);
    if (b->gpu_rng_states.numel() > 0) dict.insert("backup_gpu_rng_states", b->gpu_rng_states);
  }
  return dict;
}

// The lines of `text`, each ended by '\n' (optimizer_names).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  for (std::size_t begin = 0, end; (end = text.find('\n', begin)) != std::string::npos;
       begin = end + 1) {
    out.push_back(text.substr(begin, end - begin));
  }
  return out;
}

// Deterministic mode's exponents from a file: keyed by the names it has
// (one per line), or, in files from before the names, by position ("#i").
std::map<std::string, int> exponents_by_name(const std::vector<std::int64_t>& exponents,
                                             const std::optional<std::string>& names) {
  std::map<std::string, int> out;
  std::size_t begin = 0;
  for (std::size_t i = 0; i < exponents.size(); ++i) {
    std::string name = "#" + std::to_string(i);
    if (names) {
      const std::size_t end = names->find('\n', begin);
      TNT_CHECK(end != std::string::npos, "a checkpoint has ", exponents.size(),
                " deterministic exponents but fewer names: the file is damaged");
      name = names->substr(begin, end - begin);
      begin = end + 1;
    }
    out[name] = static_cast<int>(exponents[i]);
  }
  return out;
}

// The counters and loss scale a checkpoint holds, over the engine's own
// where the file has none (deterministic mode's state is optional).
void restore_counters_from(Engine& engine, const Entries& e) {
  Counters c = engine.counters();
  if (e.has("deterministic_seed")) {
    c.deterministic_seed = static_cast<std::uint64_t>(e.count("deterministic_seed"));
    const std::vector<std::int64_t> exponents = e.integers("deterministic_exponents");
    c.deterministic_exponents = exponents_by_name(
        exponents, e.has("deterministic_exponent_names") ? e.str("deterministic_exponent_names")
                                                         : std::optional<std::string>());
  }
  c.epochs_done = e.count("epochs_done");
  // The data order the next epoch reads (Counters::data_epochs); a file
  // from before it was kept: the epochs done.
  c.data_epochs = e.has("data_epochs") ? e.count("data_epochs") : c.epochs_done;
  c.optimizer_steps = e.count("optimizer_steps");
  std::optional<LossScaleState> scale;
  if (e.has("loss_scale")) {
    scale = LossScaleState{e.positive("loss_scale"), e.count("loss_scale_good_steps"),
                           e.count("skipped_steps")};
  }
  engine.restore_counters(c, scale);
}

}  // namespace

std::optional<CheckpointSnapshot> snapshot_checkpoint(Engine& engine, bool all_ranks,
                                                      SnapshotUse use) {
  const bool keep = all_ranks || engine.group().is_master();
  std::optional<EngineSnapshot> state = engine.snapshot(keep, use);  // collective
  if (!keep) return std::nullopt;
  return CheckpointSnapshot{std::move(*state), random_state(torch::kCPU),
                            gpu_random_state(engine.device()), std::nullopt};
}

std::optional<CheckpointSnapshot> snapshot_backup(Engine& engine, SnapshotUse use) {
  const comm::ProcessGroup& group = engine.group();
  // Every rank's generator: dropout and augmentation draw on each rank.
  const torch::Tensor rng_states = group.allgather(random_state(torch::kCPU));
  // And every rank's GPU generator where every rank has one of one size
  // (one torch, every rank on a GPU): the sizes first, so that every rank
  // takes the same branch.
  const torch::Tensor gpu = gpu_random_state(engine.device());
  const torch::Tensor sizes = group.allgather(torch::tensor({gpu.numel()}, torch::kInt64));
  const bool all_gpu = gpu.numel() > 0 && sizes.eq(gpu.numel()).all().item<bool>();
  const torch::Tensor gpu_states = all_gpu ? group.allgather(gpu) : torch::empty({0}, torch::kUInt8);
  std::optional<CheckpointSnapshot> out = snapshot_checkpoint(engine, /*all_ranks=*/false, use);
  if (out) out->backup = BackupPart{engine.position(), group.size(), rng_states, gpu_states};
  return out;
}

void write_checkpoint(const CheckpointSnapshot& snapshot, const std::string& path) {
  if (snapshot.engine.wait_for_copies) snapshot.engine.wait_for_copies();
  const std::optional<std::string> optimizer = optimizer_bytes(snapshot.engine);
  const c10::impl::GenericDict entries = checkpoint_entries(snapshot, optimizer);
  // Streamed into the file: a checkpoint is never held in memory twice.
  write_atomically(path, [&](const ByteSink& sink) { torch_save(entries, sink); });
}

void save(Engine& engine, const std::string& path, bool all_ranks) {
  if (const stages::StageLayout* layout = engine.stage_layout()) {
    TNT_CHECK(!all_ranks, "save(all_ranks=true) with pipeline stages: a rank holds its stage's "
              "state only (this rank: ", layout->describe(), "); save on the master, which "
              "writes the whole model's");
  }
  const std::optional<CheckpointSnapshot> snapshot =
      snapshot_checkpoint(engine, all_ranks, SnapshotUse::write_now);
  if (all_ranks) {
    write_checkpoint(*snapshot, path);
    engine.group().barrier();
    return;
  }
  run_on_master_checked(engine.group(), [&] { write_checkpoint(*snapshot, path); });
}

std::int64_t load(Engine& engine, const std::string& path) {
  TNT_CHECK(engine.compiled() != nullptr,
            "load() needs a compiled model: call model.compile(...) first");
  std::optional<Entries> small;
  engine.restore([&] {
    // Every entry is checked before the engine changes.
    const Entries entries = read_checkpoint(path);
    RestoredState r;
    r.weights = entries.dict("weights");
    if (entries.has("optimizer_by_name")) {  // saved with pipeline stages
      r.optimizer_by_name = entries.dict("optimizer_by_name");
      r.optimizer_kind = entries.str("optimizer_kind");
    } else {
      r.optimizer = entries.bytes("optimizer");
      if (entries.has("optimizer_names")) r.optimizer_names = lines_of(entries.str("optimizer_names"));
    }
    r.source = path;
    entries.count("epochs_done");
    if (entries.has("data_epochs")) entries.count("data_epochs");
    entries.count("optimizer_steps");
    rng_state(entries);
    if (entries.has("gpu_rng_state")) entries.byte_tensor("gpu_rng_state");
    // Optional: the state of deterministic mode and of loss scaling.
    if (entries.has("deterministic_seed")) {
      entries.count("deterministic_seed");
      entries.integers("deterministic_exponents");
      if (entries.has("deterministic_exponent_names")) entries.str("deterministic_exponent_names");
    }
    if (entries.has("loss_scale")) {
      entries.positive("loss_scale");
      entries.count("loss_scale_good_steps");
      entries.count("skipped_steps");
    }
    small = entries.subset({"epochs_done", "data_epochs", "optimizer_steps", "rng_state",
                            "gpu_rng_state",
                            "deterministic_seed",
                            "deterministic_exponents", "deterministic_exponent_names",
                            "loss_scale", "loss_scale_good_steps", "skipped_steps"});
    return r;
  });
  const Entries e = broadcast_entries(engine.group(), small, path);
  set_random_state(torch::kCPU, e.byte_tensor("rng_state"));
  // A file from a model on the CPU, or from another torch, leaves the GPU's
  // generator as it is.
  if (e.has("gpu_rng_state")) set_gpu_random_state(engine.device(), e.byte_tensor("gpu_rng_state"));
  restore_counters_from(engine, e);
  return engine.counters().epochs_done;
}

void load_weights_of_checkpoint(Engine& engine, const std::string& path) {
  std::optional<Entries> small;
  engine.restore([&] {
    const Entries entries = read_checkpoint(path);
    entries.count("epochs_done");
    if (entries.has("data_epochs")) entries.count("data_epochs");
    small = entries.subset({"epochs_done", "data_epochs"});
    RestoredState r;
    r.weights = entries.dict("weights");
    r.source = path;
    return r;
  });
  Counters c = engine.counters();
  const Entries e = broadcast_entries(engine.group(), small, path);
  c.epochs_done = e.count("epochs_done");
  c.data_epochs = e.has("data_epochs") ? e.count("data_epochs") : c.epochs_done;
  engine.restore_counters(c, std::nullopt);
}

WeightsSnapshot snapshot_weights(Engine& engine, SnapshotUse use) {
  WeightsSnapshot out{engine.whole_model_weights(), {}};
  if (use == SnapshotUse::write_now) {
    for (auto& [name, t] : out.weights) t = t.detach().cpu().contiguous();
    return out;
  }
  HostCopies host_copy(use, engine.device());
  for (auto& [name, t] : out.weights) t = host_copy(t);
  out.wait_for_copies = host_copy.waiter();
  return out;
}

void write_weights(const NamedTensorList& weights, const std::string& path) {
  const c10::Dict<std::string, torch::Tensor> dict = weight_dict(weights);
  write_atomically(path, [&](const ByteSink& sink) { torch_save(dict, sink); });
}

void save_weights(Engine& engine, const std::string& path, bool all_ranks) {
  if (const stages::StageLayout* layout = engine.stage_layout()) {
    // The stages send their weights to the master, which writes the whole
    // model's, under the Sequential's names.
    TNT_CHECK(!all_ranks, "save_weights(all_ranks=true) with pipeline stages: a rank holds its "
              "stage's weights only (this rank: ", layout->describe(), "); save on the master");
    const NamedTensorList all = snapshot_weights(engine, SnapshotUse::write_now).weights;
    run_on_master_checked(engine.group(), [&] { write_weights(all, path); });
    return;
  }
  // Weights only: no collective is needed to take them.
  auto write = [&] { write_weights(snapshot_weights(engine, SnapshotUse::write_now).weights, path); };
  if (all_ranks) {
    write();
    engine.group().barrier();
    return;
  }
  run_on_master_checked(engine.group(), write);  // no rank returns before the file is complete
}

void load_weights(Engine& engine, const std::string& path) {
  engine.restore([&] {
    const torch::IValue value = load_torch_save_file(path);
    TNT_CHECK(value.isGenericDict(), "'", path, "' holds ", detail::kind_of(value),
              ", not a dict of tensors (save with torch.save(model.state_dict(), path))");
    c10::impl::GenericDict dict = value.toGenericDict();
    // A checkpoint (save(), ModelCheckpoint's default): its weights, as
    // Keras's load_weights takes a whole model's file.
    const auto format = dict.find("format");
    const auto weights = dict.find("weights");
    if (format != dict.end() && format->value().isString() && weights != dict.end() &&
        weights->value().isGenericDict()) {
      dict = weights->value().toGenericDict();
    }
    RestoredState r;
    r.weights = dict;
    r.source = path;
    return r;
  });
}

void save_backup(Engine& engine, const std::string& path) {
  const std::optional<CheckpointSnapshot> snapshot =
      snapshot_backup(engine, SnapshotUse::write_now);
  run_on_master_checked(engine.group(), [&] { write_checkpoint(*snapshot, path); });
}

TrainingPosition restore_backup(Engine& engine, const std::string& path) {
  const comm::ProcessGroup& group = engine.group();
  load(engine, path);  // weights, optimizer, counters, the master's random state
  const std::int64_t each = random_state(torch::kCPU).numel();
  const std::int64_t state_size = MetricsAccumulator(engine.compiled()->metrics()).size();
  std::optional<Entries> small;
  run_on_master_checked(group, [&] {
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
    if (entries.has("backup_gpu_rng_states")) {
      const std::int64_t gpu_bytes = entries.byte_tensor("backup_gpu_rng_states").numel();
      TNT_CHECK(gpu_bytes > 0 && gpu_bytes % ranks == 0, "backup '", path,
                "': entry 'backup_gpu_rng_states' has ", gpu_bytes, " bytes, not a multiple of its ",
                ranks, " ranks: the file is damaged");
    }
    // A backup at an epoch's end (step 0) has no epoch in progress: no state.
    const bool epoch_end = entries.count("backup_step") == 0 && state.empty();
    TNT_CHECK(epoch_end || static_cast<std::int64_t>(state.size()) == state_size, "backup '", path,
              "' holds ", state.size(), " loss/metric values, this model has ", state_size,
              ": compile with the loss and metrics of the run that made it");
    small = entries.subset({"backup_state", "backup_epoch", "backup_step",
                            "backup_global_batch_size", "backup_ranks", "backup_rng_states",
                            "backup_gpu_rng_states"});
  });
  const Entries e = broadcast_entries(group, small, path);
  TrainingPosition position;
  position.state = e.doubles("backup_state");
  position.epoch = e.count("backup_epoch");
  position.step = e.count("backup_step");
  position.global_batch_size = e.count("backup_global_batch_size");
  position.ranks = e.count("backup_ranks");
  // The same rank count: each rank continues with its own generator; another
  // count has no such correspondence, and every rank takes the master's.
  const std::int64_t row = position.ranks == group.size() ? group.rank() : 0;
  set_random_state(torch::kCPU, e.byte_tensor("backup_rng_states").narrow(0, row * each, each));
  if (e.has("backup_gpu_rng_states")) {
    const torch::Tensor gpu = e.byte_tensor("backup_gpu_rng_states");
    const std::int64_t gpu_each = gpu.numel() / position.ranks;
    set_gpu_random_state(engine.device(), gpu.narrow(0, row * gpu_each, gpu_each));
  }
  return position;
}

std::vector<std::string> checkpoints_newest_first(const std::string& dir,
                                                  const comm::ProcessGroup& group) {
  // (has a number, its numbers in order, name): the largest is the newest.
  // All the numbers, so that "resnet50-epoch10" follows "resnet50-epoch9".
  using Key = std::tuple<bool, std::vector<std::int64_t>, std::string>;
  std::vector<std::pair<Key, std::string>> found;
  run_on_master_checked(group, [&] {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) return;
    for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
      if (!entry.is_regular_file(error)) continue;
      const std::string name = entry.path().filename().string();
      if (name.size() < 3 || name.compare(name.size() - 3, 3, ".pt") != 0) continue;
      std::vector<std::int64_t> numbers;
      for (auto digit = name.find_first_of("0123456789"); digit != std::string::npos;) {
        const auto end = name.find_first_not_of("0123456789", digit);
        numbers.push_back(std::stoll(name.substr(digit, std::min<std::size_t>(end - digit, 18))));
        digit = end == std::string::npos ? end : name.find_first_of("0123456789", end);
      }
      const bool numbered = !numbers.empty();
      found.push_back({Key{numbered, std::move(numbers), name}, entry.path().string()});
    }
  });
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
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

std::string load_latest_checkpoint(Engine& engine, const std::string& dir) {
  const std::vector<std::string> paths = checkpoints_newest_first(dir, engine.group());
  std::string failures;
  for (std::size_t i = 0; i < paths.size(); ++i) {
    try {
      load(engine, paths[i]);  // checks the whole file before it changes the engine
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
            "' can be loaded:", failures, "\nremove the damaged files, or start without resuming");
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

}  // namespace tnt::train
