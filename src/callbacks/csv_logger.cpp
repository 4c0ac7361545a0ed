#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include <tarantella/callbacks/builtins.h>
#include <tarantella/base/error.h>

#include "base/writable.h"

namespace tnt::callbacks {
namespace {

// A value as Python's repr() and Keras's CSVLogger write it: the shortest
// text that reads back as the same double (0.8649516881306966, not
// 0.86495168813069656), with ".0" on a whole number (1.0, not 1). fmt's
// "{}" is that shortest round trip, with repr's switch to exponents
// (1e-05, 1e+16).
std::string repr(double value) {
  std::string text = fmt::format("{}", value);
  if (text.find_first_not_of("-0123456789") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

CSVLogger::CSVLogger(std::string filename, char separator, bool append)
    : filename_(std::move(filename)), separator_(separator), append_(append) {
  run_on_all_ranks = false;  // one file, written by the master rank
}

void CSVLogger::on_train_begin(const Logs&) {
  keys_.clear();
  ::tnt::detail::check_writable_file(filename_, "CSVLogger");
  if (!append_) {
    std::ofstream out(filename_, std::ios::trunc);
    TNT_CHECK(out.good(), "CSVLogger cannot write '", filename_, "': check the directory");
  }
}

void CSVLogger::on_epoch_end(std::int64_t epoch, const Logs& logs) {
  errno = 0;
  std::ofstream out(filename_, std::ios::app);
  TNT_CHECK(out.good(), "CSVLogger cannot write '", filename_, "': check the directory");
  if (keys_.empty()) {
    out.seekp(0, std::ios::end);
    const bool fresh = out.tellp() == 0;
    for (const auto& [k, v] : logs) keys_.push_back(k);
    if (fresh) {
      out << "epoch";
      for (const auto& k : keys_) out << separator_ << k;
      out << "\n";
    }
  }
  out << epoch;
  for (const auto& k : keys_) {
    auto it = logs.find(k);
    out << separator_ << (it == logs.end() ? std::string() : repr(it->second));
  }
  out << "\n";
  // A full disk shows only when the buffer is written out: check then, so a
  // lost row is an error naming the file instead of a silent exit 0.
  out.flush();
  const int error = errno;
  TNT_CHECK(!out.fail(), "CSVLogger could not write epoch ", epoch + 1, " to '", filename_, "'",
            error != 0 ? fmt::format(" ({})", std::strerror(error)) : std::string(),
            ": check the free space and permissions of its directory");
}

}  // namespace tnt::callbacks
