// mpirun's standard error as the launcher shows it: the first report of a
// failing rank, without its echoes.
//
// When a rank fails, the job's standard error fills with repeats of the one
// thing worth knowing. The rank prints "tarantella: rank 2 on host node07
// failed: <message>" (an error nobody caught; the library's runtime does
// that), its wrapper adds "tarantella: rank 2 on host node07 exited with
// code 1", ranks that fail because of it report too (when the master cannot
// read a file, every rank fails with its message), and mpirun explains in
// two banners that it stopped the job. This filter shows the first rank
// report and drops the later ones (counting the other ranks they name),
// drops mpirun's banners about stopping the job, and passes everything else
// through unchanged: the ranks' own output, log lines, and OpenMPI's other
// messages (a host that cannot be reached, a program that cannot start).
//
// Lines are reassembled from the chunks mpirun writes. A line that can be
// neither a report nor a banner border is passed on as soon as that is
// clear, so partial lines (a progress display using '\r') are not held
// back. A banner is held until its closing border (or the end of the
// stream) to decide whether it is one of those dropped.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "supervise/console_filter.h"

namespace tnt::cli {

/// Example:
///   auto filter = std::make_shared<ReportFilter>();
///   OutputRelay relay(mpirun.stderr_fd, ConsoleSink{STDERR_FILENO, filter}, nullptr);
///   ... relay.finish();  filter->first_failed_rank()
class ReportFilter : public ConsoleFilter {
 public:
  /// Report lines start with this, then the rank number ...
  static constexpr std::string_view kReportPrefix = "tarantella: rank ";
  /// ... or, from a rank that failed before it knew its rank, with this and its pid.
  static constexpr std::string_view kProcessReportPrefix = "tarantella: process ";
  /// A line that is a prefix of a possible report or border is held at most this long.
  static constexpr std::size_t kMaxHeldLine = 4096;
  /// A banner longer than this is not one of mpirun's and is passed on.
  static constexpr std::size_t kMaxBannerLines = 64;

  std::string feed(std::string_view chunk) override;
  std::string finish() override;

  /// The rank named by the first report that names one (normally the one
  /// shown); nullopt if none.
  std::optional<int> first_failed_rank() const { return first_rank_; }
  /// Whether mpirun said it lost (or could not start) the daemon of a host:
  /// the job is failing even though no rank could report it (a host removed
  /// during training).
  bool daemon_lost() const { return daemon_lost_; }
  /// How many other ranks had reports (all dropped).
  int other_failed_ranks() const { return static_cast<int>(other_ranks_.size()); }

 private:
  void on_line(const std::string& line, std::string& out);
  void on_report(std::optional<int> rank, const std::string& line, std::string& out);
  void close_banner(std::string& out);
  bool may_become_special(const std::string& partial) const;

  std::string partial_;              ///< the current line so far, held back
  bool passing_ = false;             ///< the current line is ordinary and passed on as it comes
  std::vector<std::string> banner_;  ///< an open banner's lines, opening border included
  bool report_shown_ = false;
  std::optional<int> first_rank_;
  std::set<int> other_ranks_;
  bool daemon_lost_ = false;
};

}  // namespace tnt::cli
