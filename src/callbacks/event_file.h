// Private: one TensorBoard event file on disk. Opening it writes the
// file_version event TensorBoard looks for first; every later event is one
// framed record (event_record.h). Synchronous and single-threaded: the
// EventWriter (event_writer.h) calls it from its own thread.
#pragma once

#include <cstdio>
#include <memory>
#include <string>

namespace tnt::callbacks::detail {

/// The name TensorBoard recognizes:
/// events.out.tfevents.<seconds, 10 digits>.<host>.<pid>.<n><suffix>, where n
/// counts the files this process opened (two writers in one second differ).
std::string event_file_name(const std::string& suffix);

class EventFile {
 public:
  /// Creates `dir` (and parents) and a new event file in it that starts
  /// with the file_version event. Throws tnt::Error naming the path and
  /// the system's reason when that fails.
  EventFile(const std::string& dir, const std::string& suffix, double wall_time);

  /// Appends one record holding `serialized_event` (an Event message).
  void append(const std::string& serialized_event);
  /// Hands buffered bytes to the operating system.
  void flush();
  const std::string& path() const { return path_; }

 private:
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  [[noreturn]] void fail(const char* what) const;

  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

}  // namespace tnt::callbacks::detail
