// Finding (and loading) the checkpoint to resume from.
#pragma once

#include <string>

#include <tarantella/comm/process_group.h>

namespace tnt {

class Model;

/// The newest checkpoint in `dir`: among its files ending in ".pt" (the
/// temporary files of an unfinished save, "*.tmp.<pid>", never count), the
/// one whose numbers, compared in order (the epoch of ModelCheckpoint's
/// "{epoch}" templates; "resnet50-epoch10" after "resnet50-epoch9"), are the
/// largest; files without a number come before numbered ones, and ties go
/// to the later name. Returns "" when `dir` does not exist
/// or holds no checkpoint. Collective: the master looks and every rank gets
/// its answer, so the directory needs to exist only where the master runs.
///
/// Example:
///   const std::string last = tnt::latest_checkpoint("ckpt");
///   if (!last.empty()) options.initial_epoch(model.load(last));
std::string latest_checkpoint(const std::string& dir);
/// The same over `group` (its rank 0 looks), e.g. for a model on a process set.
std::string latest_checkpoint(const std::string& dir, const comm::ProcessGroup& group);

/// Loads the newest checkpoint of `dir` that can be loaded into `model`
/// (Model::load: weights, optimizer state, epochs done, random state) and
/// returns its path; "" when `dir` holds none. A newer file that cannot be
/// loaded (damaged, cut short, or of another model) is passed over with a
/// WARNING naming it, why, and the older file tried next; when files exist
/// but none loads, an Error lists each with its reason. Collective over the
/// model's group.
///
/// Example:
///   if (!tnt::load_latest_checkpoint(model, "ckpt").empty()) options.initial_epoch(model.epochs_done());
std::string load_latest_checkpoint(Model& model, const std::string& dir);

}  // namespace tnt
