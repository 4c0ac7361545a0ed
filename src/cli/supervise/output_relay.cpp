// Relaying a program's output; see output_relay.h.
#include "supervise/output_relay.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace tnt::cli {
namespace {

// Console writes are best effort: when mpirun's end of the pipe is gone the
// output is lost, which must not stop the rank (SIGPIPE is ignored).
void write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(static_cast<std::size_t>(n));
  }
}

}  // namespace

OutputRelay::OutputRelay(int read_fd, ConsoleSink console, std::unique_ptr<OutputFile> file)
    : read_fd_(read_fd), console_(std::move(console)), file_(std::move(file)) {}

OutputRelay::OutputRelay(OutputRelay&& other) noexcept
    : read_fd_(other.read_fd_), console_(std::move(other.console_)), file_(std::move(other.file_)) {
  other.read_fd_ = -1;
}

OutputRelay::~OutputRelay() { close_pipe(); }

bool OutputRelay::relay_once() {
  if (read_fd_ < 0) return false;
  char buffer[8192];
  const ssize_t n = ::read(read_fd_, buffer, sizeof(buffer));
  if (n > 0) {
    const std::string_view chunk(buffer, static_cast<std::size_t>(n));
    if (file_) file_->write(chunk);
    if (console_.fd >= 0) {
      write_all(console_.fd, console_.filter ? console_.filter->feed(chunk) : chunk);
    }
    return true;
  }
  if (n == 0 || (errno != EINTR && errno != EAGAIN)) close_pipe();
  return false;
}

void OutputRelay::finish() {
  if (read_fd_ >= 0) {
    ::fcntl(read_fd_, F_SETFL, O_NONBLOCK);
    while (relay_once()) {
    }
    close_pipe();
  }
  if (console_.filter && console_.fd >= 0) write_all(console_.fd, console_.filter->finish());
  if (file_) file_->close();
}

void OutputRelay::close_pipe() {
  if (read_fd_ >= 0) ::close(read_fd_);
  read_fd_ = -1;
}

}  // namespace tnt::cli
