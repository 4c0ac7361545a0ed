#include "train/persist/engine_host.h"

#include <ostream>
#include <sstream>

#include <fmt/format.h>

#include "io/master_checked.h"
#include "train/persist/persistence.h"

namespace tnt::train {

EngineHost::EngineHost(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}

EngineHost::~EngineHost() = default;

std::vector<torch::Tensor> EngineHost::get_weights_on_host() const {
  return engine_->get_weights(torch::kCPU);
}

std::vector<torch::Tensor> EngineHost::get_weights() const {
  return engine_->get_weights(engine_->device());
}

void EngineHost::set_weights(const std::vector<torch::Tensor>& weights) {
  engine_->set_weights(weights);
}

void EngineHost::save(const std::string& path) { train::save(*engine_, path, false); }

void EngineHost::save_weights(const std::string& path) {
  train::save_weights(*engine_, path, false);
}

void EngineHost::save_backup(const std::string& path) { train::save_backup(*engine_, path); }

TrainingPosition EngineHost::restore_backup(const std::string& path) {
  return train::restore_backup(*engine_, path);
}

void EngineHost::save_backup_in_background(const std::string& path) {
  wait_for_backups();  // at most one write in flight; its failure on every rank
  std::optional<CheckpointSnapshot> snapshot = snapshot_backup(*engine_);  // collective
  if (!snapshot) return;                                                   // not the master
  if (!writer_) writer_ = std::make_unique<CheckpointWriter>();
  writer_->submit(std::move(*snapshot), path);
}

void EngineHost::wait_for_backups() {
  run_on_master_checked(group(), [&] {
    if (writer_) writer_->wait();
  });
}

void EngineHost::save_in_background(const std::string& path, bool weights_only) {
  wait_for_checkpoints();  // at most one write in flight; its failure on every rank
  if (!group().is_master()) {
    if (!weights_only) snapshot_checkpoint(*engine_, /*all_ranks=*/false);  // collective
    // With pipeline stages, the master gathers every stage's weights.
    if (weights_only && engine_->stage_layout()) snapshot_weights(*engine_, SnapshotUse::write_now);
    return;
  }
  if (!checkpoint_writer_) checkpoint_writer_ = std::make_unique<CheckpointWriter>();
  if (weights_only) {
    auto weights = std::make_shared<const WeightsSnapshot>(
        snapshot_weights(*engine_, SnapshotUse::write_later));
    checkpoint_writer_->submit([weights, path] {
      if (weights->wait_for_copies) weights->wait_for_copies();  // a GPU's, queued
      write_weights(weights->weights, path);
    });
  } else {
    checkpoint_writer_->submit(std::move(*snapshot_checkpoint(*engine_, false)), path);
  }
}

void EngineHost::wait_for_checkpoints() {
  run_on_master_checked(group(), [&] {
    if (checkpoint_writer_) checkpoint_writer_->wait();
  });
}

void EngineHost::summary(std::ostream& out) const {
  if (!group().is_master()) return;
  ModuleAdapter& net = engine_->net();
  std::int64_t trainable = 0, frozen = 0;
  out << fmt::format("Model: {}\n{:<40} {:<20} {:>12}\n", net.type_name(), "parameter", "shape",
                     "count");
  out << std::string(74, '-') << "\n";
  for (const auto& [name, p] : net.named_parameters()) {
    std::ostringstream shape;
    shape << p.sizes();
    out << fmt::format("{:<40} {:<20} {:>12}\n", name, shape.str(), p.numel());
    (p.requires_grad() ? trainable : frozen) += p.numel();
  }
  std::int64_t buffer_elements = 0;
  for (const auto& [name, b] : net.named_buffers()) buffer_elements += b.numel();
  out << std::string(74, '-') << "\n"
      << fmt::format(
             "Trainable parameters: {}\nNon-trainable parameters: {}\nBuffer elements: {}\n",
             trainable, frozen, buffer_elements);
}

}  // namespace tnt::train
