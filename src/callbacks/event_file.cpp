#include "callbacks/event_file.h"

#include <fmt/format.h>
#include <tarantella/base/error.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "base/writable.h"
#include "callbacks/event_record.h"
#include "callbacks/tensorboard_proto.h"

namespace tnt::callbacks::detail {
namespace {

constexpr const char* kFileVersion = "brain.Event:2";

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::string event_file_name(const std::string& suffix) {
  static std::atomic<long> files_opened{0};
  return fmt::format("events.out.tfevents.{:010d}.{}.{}.{}{}",
                     static_cast<long long>(std::time(nullptr)), host_name(),
                     static_cast<long>(::getpid()), files_opened++, suffix);
}

EventFile::EventFile(const std::string& dir, const std::string& suffix, double wall_time) {
  ::tnt::detail::make_directories(dir, "TensorBoard");
  path_ = (std::filesystem::path(dir) / event_file_name(suffix)).string();
  file_.reset(std::fopen(path_.c_str(), "wb"));
  if (!file_) fail("create");
  tensorboard::proto::Event version;
  version.set_wall_time(wall_time);
  version.set_file_version(kFileVersion);
  append(version.SerializeAsString());
  flush();
}

void EventFile::append(const std::string& serialized_event) {
  const std::string record = frame_record(serialized_event);
  if (std::fwrite(record.data(), 1, record.size(), file_.get()) != record.size()) fail("write");
}

void EventFile::flush() {
  if (std::fflush(file_.get()) != 0) fail("flush");
}

void EventFile::fail(const char* what) const {
  const int err = errno;
  ::tnt::detail::throw_error(fmt::format("TensorBoard: cannot {} the event file '{}': {}", what,
                                         path_, std::strerror(err)));
}

}  // namespace tnt::callbacks::detail
