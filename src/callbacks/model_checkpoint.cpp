#include <filesystem>
#include <functional>
#include <regex>

#include <fmt/format.h>

#include "base/writable.h"

#include <tarantella/callbacks/builtins.h>
#include <tarantella/train/training_host.h>
#include <tarantella/base/logging.h>

#include "callbacks/monitor.h"

namespace tnt::callbacks {

std::string format_filepath(const std::string& pattern, std::int64_t epoch, const Logs& logs) {
  static const std::regex field(R"(\{([A-Za-z_][A-Za-z0-9_]*)(?::([^}]*))?\})");
  std::string out;
  auto begin = pattern.cbegin();
  for (std::sregex_iterator it(pattern.begin(), pattern.end(), field), end; it != end; ++it) {
    const std::smatch& m = *it;
    out.append(begin, m[0].first);
    const std::string name = m[1].str();
    const std::string spec = "{:" + m[2].str() + "}";
    if (name == "epoch") {
      out += fmt::format(fmt::runtime(spec), epoch + 1);
    } else {
      auto v = logs.find(name);
      TNT_CHECK(v != logs.end(), "checkpoint file name '", pattern, "' uses {", name,
                "}, which is not in the logs");
      out += fmt::format(fmt::runtime(spec), v->second);
    }
    begin = m[0].second;
  }
  out.append(begin, pattern.cend());
  return out;
}

ModelCheckpoint::ModelCheckpoint(ModelCheckpointOptions options) : o_(std::move(options)) {
  TNT_CHECK(!o_.filepath().empty(), "ModelCheckpoint needs a file path");
  // Saving is collective: every rank calls it, the master writes.
  run_on_all_ranks = true;
  // Once, as Keras's: the best so far holds across fit calls (a loop of
  // fit(epochs=1) saves only an improvement).
  best_ = detail::worst(detail::maximize(o_.mode(), o_.monitor()));
}

void ModelCheckpoint::on_train_begin(const Logs&) {
  batches_ = 0;
  // Found now rather than after the first epoch of training. A missing
  // folder is made, as Keras' ModelCheckpoint does (unless its name has
  // {fields}, filled in only when a checkpoint is saved).
  const std::string folder = std::filesystem::path(o_.filepath()).parent_path().string();
  if (folder.find('{') != std::string::npos) return;  // made at each save (save())
  if (!folder.empty()) ::tnt::detail::make_directories(folder, "ModelCheckpoint");
  ::tnt::detail::check_writable_file(o_.filepath(), "ModelCheckpoint");
}

void ModelCheckpoint::on_epoch_begin(std::int64_t epoch, const Logs&) { epoch_ = epoch; }

bool ModelCheckpoint::wants_batch_logs(std::int64_t) const {
  return o_.save_freq_batches() > 0 && (batches_ + 1) % o_.save_freq_batches() == 0;
}

void ModelCheckpoint::on_train_batch_end(std::int64_t, const Logs& logs) {
  if (o_.save_freq_batches() > 0 && ++batches_ % o_.save_freq_batches() == 0) save(epoch_, logs);
}

void ModelCheckpoint::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  if (o_.save_freq_batches() == 0) save(epoch, logs);
}

void ModelCheckpoint::save(std::int64_t epoch, const Logs& logs) {
  if (o_.save_best_only()) {
    const bool max = detail::maximize(o_.mode(), o_.monitor());
    const auto current = detail::monitored(logs, o_.monitor(), "ModelCheckpoint", params());
    if (!current || !detail::improved(max, *current, best_, 0.0)) return;
    best_ = *current;
  }
  const std::string path = format_filepath(o_.filepath(), epoch, logs);
  if (std::filesystem::path(o_.filepath()).parent_path().string().find('{') != std::string::npos) {
    // A folder with {fields} ("ckpt/ep{epoch}/w.pt"): made for this file.
    const std::string folder = std::filesystem::path(path).parent_path().string();
    if (!folder.empty()) ::tnt::detail::make_directories(folder, "ModelCheckpoint");
  }
  if (o_.write_in_background()) {
    // A failure here is the previous background write's; its message names
    // that file.
    checked([&] { host()->save_in_background(path, o_.save_weights_only()); });
    log::info(fmt::format("epoch {}: saving {} (written in the background)", epoch + 1, path));
    return;
  }
  if (o_.save_weights_only()) {
    host()->save_weights(path);
  } else {
    host()->save(path);
  }
  log::info(fmt::format("epoch {}: saved {}", epoch + 1, path));
}

void ModelCheckpoint::on_train_end(const Logs&) {
  // The last file is on disk before fit() returns (fit() waits too; here a
  // failure is reported as this callback's).
  if (o_.write_in_background()) checked([&] { host()->wait_for_checkpoints(); });
}

void ModelCheckpoint::checked(const std::function<void()>& step) const {
  try {
    step();
  } catch (const TimeoutError&) {
    throw;  // a rank is gone: the communication layer's message says which
  } catch (const Error& e) {
    throw Error(fmt::format("ModelCheckpoint could not write a checkpoint: {}; the checkpoints "
                            "written before it are intact",
                            e.what()));
  }
}

}  // namespace tnt::callbacks
