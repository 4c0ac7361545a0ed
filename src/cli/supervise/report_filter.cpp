// Filtering mpirun's standard error; see report_filter.h.
#include "supervise/report_filter.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace tnt::cli {
namespace {

// OpenMPI's help messages (show_help) sit between two lines of 74 dashes.
constexpr std::size_t kBorderWidth = 74;

// What mpirun says when it stops a job because a rank ended badly; the
// rank reports above it say the same, naming the rank. (OpenMPI 4.1's
// help-errmgr-base.txt, help-orterun.txt and help-mpi-api.txt.)
constexpr std::array<std::string_view, 5> kStopBannerPhrases = {
    "terminated normally, but",  // normal-termination-but
    "mpirun detected that one or more processes exited with non-zero status",  // non-zero-exit
    "mpirun noticed that process rank",       // proc-aborted-signal
    "mpirun has exited due to process rank",  // proc-exit-no-sync
    "MPI_ABORT was invoked on rank",          // mpi-abort
};

std::string_view without_newline(std::string_view line) {
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  return line;
}

bool is_border(std::string_view text) {
  return text.size() == kBorderWidth &&
         std::all_of(text.begin(), text.end(), [](char c) { return c == '-'; });
}

// The number after `prefix` in "PREFIX 12 ..."; nullopt if `text` is not of that form.
std::optional<int> number_after(std::string_view prefix, std::string_view text) {
  if (text.substr(0, prefix.size()) != prefix) return std::nullopt;
  text.remove_prefix(prefix.size());
  int number = 0;
  std::size_t digits = 0;
  while (digits < text.size() && digits < 9 &&
         std::isdigit(static_cast<unsigned char>(text[digits]))) {
    number = number * 10 + (text[digits] - '0');
    ++digits;
  }
  if (digits == 0 || digits == text.size() || text[digits] != ' ') return std::nullopt;
  return number;
}

// A report line: "tarantella: rank 12 on host ..." (with the rank) or
// "tarantella: process 4711 on host ..." (rank unknown).
struct Report {
  std::optional<int> rank;
};

std::optional<Report> as_report(std::string_view text) {
  if (const auto rank = number_after(ReportFilter::kReportPrefix, text)) return Report{rank};
  if (number_after(ReportFilter::kProcessReportPrefix, text)) return Report{std::nullopt};
  return std::nullopt;
}

// Whether `partial` could still become a line starting with `prefix`.
bool may_start(std::string_view partial, std::string_view prefix) {
  const std::size_t common = std::min(partial.size(), prefix.size());
  return partial.substr(0, common) == prefix.substr(0, common);
}

bool is_stop_banner(const std::vector<std::string>& lines) {
  for (const auto& line : lines) {
    for (const auto phrase : kStopBannerPhrases) {
      if (line.find(phrase) != std::string::npos) return true;
    }
  }
  return false;
}

void append_all(const std::vector<std::string>& lines, std::string& out) {
  for (const auto& line : lines) out += line;
}

}  // namespace

std::string ReportFilter::feed(std::string_view chunk) {
  std::string out;
  while (!chunk.empty()) {
    const auto newline = chunk.find('\n');
    const std::string_view piece =
        chunk.substr(0, newline == std::string_view::npos ? chunk.size() : newline + 1);
    chunk.remove_prefix(piece.size());
    if (passing_) {
      out += piece;
      passing_ = piece.back() != '\n';
      continue;
    }
    partial_ += piece;
    if (newline != std::string_view::npos) {
      const std::string line = std::move(partial_);
      partial_.clear();
      on_line(line, out);
    }
  }
  if (!partial_.empty() && banner_.empty() &&
      (!may_become_special(partial_) || partial_.size() >= kMaxHeldLine)) {
    out += partial_;
    partial_.clear();
    passing_ = true;
  }
  return out;
}

std::string ReportFilter::finish() {
  std::string out;
  append_all(banner_, out);
  banner_.clear();
  out += partial_;
  partial_.clear();
  passing_ = false;
  return out;
}

void ReportFilter::on_line(const std::string& line, std::string& out) {
  const std::string_view text = without_newline(line);
  // OpenMPI 4.1's words when a host's daemon dies or cannot be reached.
  for (const std::string_view words :
       {"ORTE has lost communication with a remote daemon",
        "ORTE was unable to reliably start one or more daemons",
        "An ORTE daemon has unexpectedly failed"}) {
    if (text.find(words) != std::string_view::npos) daemon_lost_ = true;
  }
  if (!banner_.empty()) {
    banner_.push_back(line);
    if (is_border(text)) {
      close_banner(out);
    } else if (banner_.size() > kMaxBannerLines) {
      append_all(banner_, out);
      banner_.clear();
    }
    return;
  }
  if (is_border(text)) {
    banner_.push_back(line);
  } else if (const auto report = as_report(text)) {
    on_report(report->rank, line, out);
  } else {
    out += line;
  }
}

void ReportFilter::on_report(std::optional<int> rank, const std::string& line, std::string& out) {
  if (!report_shown_) {
    report_shown_ = true;
    out += line;
  }
  if (!rank) return;
  if (!first_rank_) {
    first_rank_ = rank;
  } else if (*rank != *first_rank_) {
    other_ranks_.insert(*rank);
  }
}

void ReportFilter::close_banner(std::string& out) {
  if (!is_stop_banner(banner_)) append_all(banner_, out);
  banner_.clear();
}

bool ReportFilter::may_become_special(const std::string& partial) const {
  if (may_start(partial, kReportPrefix) || may_start(partial, kProcessReportPrefix)) return true;
  return partial.size() <= kBorderWidth &&
         std::all_of(partial.begin(), partial.end(), [](char c) { return c == '-'; });
}

}  // namespace tnt::cli
