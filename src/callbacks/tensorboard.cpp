// TensorBoard: maps the training loop's logs onto event files. The files and
// their writer threads live between on_train_begin and on_train_end; the
// validation file is opened only when validation values first appear, so a
// run without validation has no empty validation/ folder.
#include <fmt/format.h>
#include <tarantella/callbacks/tensorboard.h>
#include <tarantella/base/error.h>
#include <tarantella/runtime/runtime.h>

#include <chrono>
#include <filesystem>
#include <utility>

#include "callbacks/event_writer.h"

namespace tnt::callbacks {
namespace {

constexpr const char* kValidationPrefix = "val_";

double seconds_now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The running job's configuration (TNT_TENSORBOARD_ON_ALL_DEVICES, resolved
// once by the runtime); without a runtime, the master rank only.
bool tensorboard_on_all_devices() {
  return is_initialized() && config().tensorboard_on_all_devices;
}

}  // namespace

TensorBoardOptions& TensorBoardOptions::update_freq(const std::string& v) {
  if (v == "epoch") {
    update_freq_ = 0;
  } else if (v == "batch") {
    update_freq_ = 1;
  } else {
    ::tnt::detail::throw_error(
        fmt::format("TensorBoard: update_freq '{}' is not 'epoch', 'batch' or a number of batches: "
                    "use one of those",
                    v));
  }
  return *this;
}

TensorBoardOptions& TensorBoardOptions::update_freq(std::int64_t every_n_batches) {
  TNT_CHECK(every_n_batches >= 1, "TensorBoard: update_freq of ", every_n_batches,
            " batches must be at least 1: use 'epoch' to write once per epoch");
  update_freq_ = every_n_batches;
  return *this;
}

struct TensorBoard::Writers {
  std::string dir;
  std::string suffix;
  std::unique_ptr<detail::EventWriter> train;
  std::unique_ptr<detail::EventWriter> validation;  // opened on first use

  detail::EventWriter& validation_writer() {
    if (!validation) {
      validation = std::make_unique<detail::EventWriter>(
          (std::filesystem::path(dir) / "validation").string(), suffix);
    }
    return *validation;
  }
  void request_flush() {
    train->request_flush();
    if (validation) validation->request_flush();
  }
  void flush() {
    train->flush();
    if (validation) validation->flush();
  }
};

TensorBoard::TensorBoard(TensorBoardOptions options) : options_(std::move(options)) {
  TNT_CHECK(!options_.log_dir().empty(),
            "TensorBoard: the log_dir is empty: pass the folder the event files go to");
  const bool all_devices = tensorboard_on_all_devices();
  run_on_all_ranks = all_devices;
  aggregate_logs = !all_devices;
}

TensorBoard::~TensorBoard() = default;

// The dispatcher may already skip this callback on other ranks; the check
// here keeps that true whoever calls the hooks.
bool TensorBoard::writes_on_this_rank() const { return run_on_all_ranks || master(); }

std::string TensorBoard::rank_log_dir() const {
  if (!writes_on_this_rank()) return "";
  if (!run_on_all_ranks) return options_.log_dir();
  return (std::filesystem::path(options_.log_dir()) / fmt::format("rank_{}", get_rank())).string();
}

void TensorBoard::on_train_begin(const Logs&) {
  writers_.reset();
  batches_seen_ = 0;
  if (!writes_on_this_rank()) return;
  auto writers = std::make_unique<Writers>();
  writers->dir = rank_log_dir();
  writers->suffix = options_.filename_suffix();
  writers->train = std::make_unique<detail::EventWriter>(
      (std::filesystem::path(writers->dir) / "train").string(), writers->suffix);
  writers_ = std::move(writers);
}

void TensorBoard::on_epoch_begin(std::int64_t, const Logs&) {
  epoch_first_batch_ = batches_seen_;
  epoch_start_seconds_ = seconds_now();
}

bool TensorBoard::wants_batch_logs(std::int64_t) const {
  return writers_ && options_.update_freq() > 0 && (batches_seen_ + 1) % options_.update_freq() == 0;
}

void TensorBoard::on_train_batch_end(std::int64_t, const Logs& logs) {
  ++batches_seen_;
  if (!writers_ || options_.update_freq() == 0 || batches_seen_ % options_.update_freq() != 0) {
    return;
  }
  for (const auto& [name, value] : logs) {
    if (starts_with(name, kValidationPrefix)) continue;
    writers_->train->add_scalar("batch_" + name, value, batches_seen_);
  }
}

void TensorBoard::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  if (!writers_) return;
  for (const auto& [name, value] : logs) {
    if (starts_with(name, kValidationPrefix)) {
      const std::string tag = "epoch_" + name.substr(std::string(kValidationPrefix).size());
      writers_->validation_writer().add_scalar(tag, value, epoch);
    } else {
      writers_->train->add_scalar("epoch_" + name, value, epoch);
    }
  }
  if (options_.write_steps_per_second()) {
    const double seconds = seconds_now() - epoch_start_seconds_;
    const auto steps = static_cast<double>(batches_seen_ - epoch_first_batch_);
    writers_->train->add_scalar("epoch_steps_per_second", seconds > 0 ? steps / seconds : 0.0,
                                epoch);
  }
  writers_->request_flush();
}

void TensorBoard::on_step_times(const train::StepTimesWindow& window) {
  if (!writers_) return;
  for (std::size_t r = 0; r < window.ranks.size(); ++r) {
    const train::RankStepTimes& t = window.ranks[r];
    for (const auto& [name, value] : {std::pair<const char*, double>{"data", t.data_ms},
                                      {"compute", t.compute_ms},
                                      {"other", t.other_ms},
                                      {"wait", t.wait_ms}}) {
      writers_->train->add_scalar(fmt::format("straggler/{}_ms/rank_{}", name, r), value,
                                  batches_seen_);
    }
  }
}

void TensorBoard::on_train_end(const Logs&) {
  if (!writers_) return;
  std::unique_ptr<Writers> writers = std::move(writers_);
  writers->flush();  // errors of the writer threads surface here
}

}  // namespace tnt::callbacks
