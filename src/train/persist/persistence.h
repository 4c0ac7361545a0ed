// Private: persistence of the engine, below both front ends (tnt::Model in
// model/, tnt.Model in python/): whole-model checkpoints (save/load),
// weight files, backups that fit() resumes from, and finding the newest
// checkpoint of a directory. A checkpoint written from one front end loads
// in the other.
//
// It works on the engine only through Engine::snapshot() and
// Engine::restore(). Saving is two steps, so that an asynchronous writer
// can run the second on a thread of its own while training goes on:
//   1. snapshot_checkpoint / snapshot_backup, at a step boundary on every
//      rank (collective): the state copied to host memory;
//   2. write_checkpoint, on the rank that writes (no collective): the
//      torch.save-format file, written to a temporary name, flushed to
//      disk and renamed into place (io/atomic_file.h), so that a crash
//      leaves the previous file or the new one, never half of one.
//
// The file: one torch.save dict
//   format: "tarantella-checkpoint-1"
//   weights: {name: tensor}      (parameters and buffers)
//   epochs_done, optimizer_steps: int
//   rng_state: uint8 tensor      (the default CPU generator)
//   gpu_rng_state: uint8 tensor  (the model's GPU's default generator, from
//                                a model on a GPU only)
//   optimizer: uint8 tensor      (torch::optim's own serialization; if compiled)
//   optimizer_names: str         (its parameters' names in its order, one per
//                                line, so that another order maps by name)
//   or, with pipeline stages, optimizer_by_name and optimizer_kind: the
//   whole model's optimizer state by parameter name, so that the file loads
//   at any layout (train/engine/optimizer_by_name.h); "weights" is then the
//   whole model's too, gathered from the stages
//   architecture: str            (the network's config, layer-registry models)
//   torchscript: uint8 tensor    (the module's bytes, TorchScript models)
//   compile: str                 (the compile configuration, if compiled)
//   deterministic_seed, deterministic_exponents, deterministic_exponent_names
//                                (deterministic mode; names one per line)
//   loss_scale, loss_scale_good_steps, skipped_steps   (loss scaling)
// and, in a backup, backup_epoch, backup_step, backup_state,
// backup_global_batch_size, backup_ranks, backup_rng_states (every rank's
// generator) and, where every rank trains on a GPU, backup_gpu_rng_states
// (every rank's GPU generator), so that training stopped after epoch k (or at step s of it)
// and resumed from the file ends bitwise equal to an uninterrupted run.
#pragma once

#include <cstdint>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include <tarantella/comm/process_group.h>
#include <tarantella/train/training_host.h>

#include "train/engine/engine.h"

namespace tnt::train {

/// What a backup holds beyond a checkpoint: where fit() stood, and the
/// random state of every rank (dropout and augmentation draw on each).
struct BackupPart {
  TrainingPosition position;
  std::int64_t ranks = 0;
  torch::Tensor rng_states;  ///< every rank's CPU generator state, concatenated
  /// Every rank's GPU generator state, concatenated, where every rank trains
  /// on a GPU (Dropout there draws from it); empty otherwise.
  torch::Tensor gpu_rng_states;
};

/// Everything one checkpoint file holds, in host memory.
struct CheckpointSnapshot {
  EngineSnapshot engine;
  torch::Tensor rng_state;  ///< the writing rank's CPU generator
  torch::Tensor gpu_rng_state;  ///< its GPU generator, for a model on a GPU; else empty
  std::optional<BackupPart> backup;
};

/// Step 1 of a save, at a step boundary. Collective. The snapshot is made
/// on the master, or on every rank with `all_ranks`; the other ranks get none.
/// `use`: see SnapshotUse (a snapshot for write_now must be written before
/// training goes on).
std::optional<CheckpointSnapshot> snapshot_checkpoint(
    Engine& engine, bool all_ranks, SnapshotUse use = SnapshotUse::write_later);
/// The same for a backup at the engine's position(); made on the master.
std::optional<CheckpointSnapshot> snapshot_backup(Engine& engine,
                                                  SnapshotUse use = SnapshotUse::write_later);
/// Step 2: writes `snapshot` to `path` atomically. Not collective; any thread.
void write_checkpoint(const CheckpointSnapshot& snapshot, const std::string& path);

/// A weights file's content (parameters, then buffers) in host memory:
/// copies for `write_later` (a write beside training; from a GPU, queued
/// without the host waiting: call wait_for_copies before reading them). Not
/// collective without stages; with pipeline stages, collective over the
/// first replica's stages, and the whole model's on the master only.
/// write_weights writes it in the format of save_weights, atomically; any
/// thread.
struct WeightsSnapshot {
  NamedTensorList weights;
  std::function<void()> wait_for_copies;  ///< empty: nothing to wait for
};
WeightsSnapshot snapshot_weights(Engine& engine, SnapshotUse use);
void write_weights(const NamedTensorList& weights, const std::string& path);

/// Whole-model checkpoints (collective). load() needs a compiled engine and
/// returns the completed epochs the file holds; every entry is checked
/// before anything changes.
void save(Engine& engine, const std::string& path, bool all_ranks);
std::int64_t load(Engine& engine, const std::string& path);
/// Restores weights, buffers and completed epochs from a checkpoint (not the
/// optimizer: for uncompiled engines). Collective.
void load_weights_of_checkpoint(Engine& engine, const std::string& path);

/// Weight files in the format of Python's torch.save(dict_of_tensors)
/// (parameters and buffers by name), which torch.load reads, also with
/// weights_only=True; load_weights reads what torch.save writes, including
/// model.state_dict()'s OrderedDict. Collective.
void save_weights(Engine& engine, const std::string& path, bool all_ranks);
void load_weights(Engine& engine, const std::string& path);

/// A checkpoint plus the engine's position and every rank's random state
/// (snapshot_backup + write_checkpoint on the master). Collective.
void save_backup(Engine& engine, const std::string& path);
/// Loads a backup like load() and returns its position; with the rank count
/// of the backup, each rank gets its own random state back, with another,
/// the master's. Collective.
TrainingPosition restore_backup(Engine& engine, const std::string& path);

/// The checkpoints (*.pt) of `dir`, newest first: names with a number by
/// their first number, then by name. The master looks; every rank gets the
/// list. Collective.
std::vector<std::string> checkpoints_newest_first(const std::string& dir,
                                                  const comm::ProcessGroup& group);
/// Loads the newest loadable checkpoint of `dir` (a damaged one is logged
/// and the next older tried) and returns its path; empty if `dir` has none.
std::string load_latest_checkpoint(Engine& engine, const std::string& dir);

/// What a checkpoint says about the model, beyond weights: JSON texts /
/// bytes, empty where absent. Read on the master, broadcast; errors name
/// the file, on every rank. Collective.
struct SavedModelDescription {
  std::string architecture;  // the network's config (layer-registry models)
  std::string torchscript;   // a TorchScript module's bytes
  std::string compile;       // the compile configuration, if compiled
};
SavedModelDescription read_saved_model_description(const comm::ProcessGroup& group,
                                                   const std::string& path);

}  // namespace tnt::train
