// BackupAndRestore: one backup file per run directory, written at epoch ends
// and every save_freq optimizer steps; restored by on_train_begin, after
// which fit() continues from the saved position (TrainingHost::resume_from).
#include <filesystem>
#include <system_error>
#include <utility>

#include <fmt/format.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>
#include <tarantella/callbacks/builtins.h>

#include "base/writable.h"
#include "io/master_checked.h"
#include <tarantella/train/training_host.h>

namespace tnt::callbacks {
namespace {

// A rank killed while writing a backup leaves its temporary file
// (backup.pt.tmp.PID, io/atomic_file.cpp) behind; backup.pt itself is
// intact. Nothing writes here while training begins, so the leftovers of
// earlier attempts go now, instead of piling up over many restarts (found
// by tests/chaos).
void remove_stale_temporaries(const std::string& dir, const std::string& file) {
  const std::string prefix = std::filesystem::path(file).filename().string() + ".tmp.";
  std::error_code error;  // a folder that cannot be listed is reported later, on writing
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    std::error_code ignored;  // a leftover that cannot be removed harms nothing
    std::filesystem::remove(it->path(), ignored);
  }
}

std::string position_text(const train::TrainingPosition& at) {
  return at.step > 0 ? fmt::format("epoch {}, after step {}", at.epoch + 1, at.step)
                     : fmt::format("the start of epoch {}", at.epoch + 1);
}

}  // namespace

BackupAndRestore::BackupAndRestore(std::string backup_dir, std::int64_t save_freq,
                                   bool delete_checkpoint)
    : dir_(std::move(backup_dir)), save_freq_(save_freq), delete_checkpoint_(delete_checkpoint) {
  TNT_CHECK(!dir_.empty(), "BackupAndRestore needs a backup directory");
  TNT_CHECK(save_freq_ >= 0, "BackupAndRestore: save_freq ", save_freq_,
            " is invalid: give the optimizer steps between backups (>= 1), or 0 for epoch ends "
            "only");
  run_on_all_ranks = true;  // saving and restoring are collective
}

std::string BackupAndRestore::backup_path() const {
  return (std::filesystem::path(dir_) / "backup.pt").string();
}

void BackupAndRestore::on_train_begin(const Logs&) {
  batches_ = 0;
  on_disk_.clear();
  in_flight_.clear();
  std::string found;
  run_on_master_checked(host()->group(), [&] {
    ::tnt::detail::make_directories(dir_, "BackupAndRestore");
    ::tnt::detail::check_writable_directory(dir_, "BackupAndRestore");
    remove_stale_temporaries(dir_, backup_path());
    std::error_code error;
    if (std::filesystem::exists(backup_path(), error)) found = backup_path();
  });
  if (host()->group().broadcast_string(found).empty()) return;
  const train::TrainingPosition position = host()->restore_backup(backup_path());
  const std::string where = position_text(position);
  on_disk_ = where;
  log::warning(fmt::format("BackupAndRestore: resuming from '{}' at {} (backed up at {} ranks, "
                           "running at {})",
                           backup_path(), where, position.ranks, host()->group().size()));
  host()->resume_from(position);
}

void BackupAndRestore::on_train_batch_end(std::int64_t, const Logs&) {
  if (save_freq_ > 0 && ++batches_ % save_freq_ == 0) backup();
}

void BackupAndRestore::on_epoch_end(std::int64_t, const Logs&) { backup(); }

void BackupAndRestore::on_train_end(const Logs&) {
  if (!in_flight_.empty()) {
    try {
      host()->wait_for_backups();
    } catch (const TimeoutError&) {
      throw;
    } catch (const Error& e) {
      fail(in_flight_, e.what());
    }
    on_disk_ = std::exchange(in_flight_, std::string());
  }
  if (!delete_checkpoint_) return;
  run_on_master_checked(host()->group(), [&] {
    std::error_code error;
    std::filesystem::remove(backup_path(), error);
    TNT_CHECK(!error, "BackupAndRestore: training is complete but its backup '", backup_path(),
              "' cannot be removed: ", error.message());
  });
}

void BackupAndRestore::fail(const std::string& what, const std::string& reason) const {
  // Written to a temporary file and renamed: a failed write (a full disk)
  // leaves the previous backup as it was, and a restart continues from it.
  const std::string previous =
      on_disk_.empty() ? "there is no earlier backup, so a restart begins at the start"
                       : fmt::format("the previous backup (at {}) is intact, and the job "
                                     "continues from it when started again",
                                     on_disk_);
  throw Error(fmt::format("BackupAndRestore could not back up {} to '{}': {}; {}", what,
                          backup_path(), reason, previous));
}

void BackupAndRestore::backup() {
  const train::TrainingPosition& at = host()->position();
  const std::string here = position_text(at);
  try {
    if (background_) {
      // A failure here is the previous background write's.
      host()->save_backup_in_background(backup_path());
    } else {
      host()->save_backup(backup_path());
    }
  } catch (const TimeoutError&) {
    throw;  // a rank is gone: the communication layer's message says which
  } catch (const Error& e) {
    fail(in_flight_.empty() ? here : in_flight_, e.what());
  }
  if (background_) {
    if (!in_flight_.empty()) on_disk_ = in_flight_;
    in_flight_ = here;
  } else {
    on_disk_ = here;
  }
  log::debug(fmt::format("BackupAndRestore: backed up epoch {} step {} to '{}'{}", at.epoch + 1,
                         at.step, backup_path(), background_ ? " (writing in the background)" : ""));
}

}  // namespace tnt::callbacks
