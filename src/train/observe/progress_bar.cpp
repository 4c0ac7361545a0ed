#include "train/observe/progress_bar.h"

#include <unistd.h>

#include <cstdlib>

#include <fmt/format.h>


namespace tnt::detail {
namespace {
constexpr int kWidth = 30;
double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}
}  // namespace

bool ProgressBar::output_is_terminal(std::FILE* out) {
  return out != nullptr && ::isatty(::fileno(out)) == 1;
}

ProgressBar::ProgressBar(std::int64_t total, int verbose, bool enabled, std::FILE* out,
                         std::optional<bool> live, Clock now)
    : total_(total),
      verbose_(verbose),
      enabled_(enabled && verbose > 0),
      live_(enabled_ && verbose == 1 && (live ? *live : output_is_terminal(out))),
      out_(out),
      now_(now ? std::move(now) : Clock([] { return std::chrono::steady_clock::now(); })),
      start_(now_()),
      last_draw_(start_ - std::chrono::seconds(1)) {}

bool ProgressBar::due() const { return live_ && now_() - last_draw_ >= kRedrawInterval; }

std::string ProgressBar::format_logs(const std::map<std::string, double>& logs) {
  std::string s;
  for (const auto& [name, value] : logs) s += fmt::format(" - {}: {:.4f}", name, value);
  return s;
}

std::string ProgressBar::bar(std::int64_t done) const {
  if (total_ <= 0) return fmt::format("{}/Unknown", done);
  const int filled = static_cast<int>(kWidth * done / total_);
  std::string b(static_cast<std::size_t>(kWidth), '.');
  for (int i = 0; i < filled; ++i) b[static_cast<std::size_t>(i)] = '=';
  if (filled < kWidth) b[static_cast<std::size_t>(filled)] = '>';
  const int digits = static_cast<int>(std::to_string(total_).size());
  return fmt::format("{:>{}}/{} [{}]", done, digits, total_, b);
}

void ProgressBar::update(std::int64_t step_done, const std::map<std::string, double>& logs) {
  done_ = step_done;
  if (!due()) return;
  const auto now = now_();
  last_draw_ = now;
  const double per_step = seconds(now - start_) / static_cast<double>(std::max<std::int64_t>(1, done_));
  const std::string eta =
      total_ > 0 ? fmt::format(" - ETA: {:.0f}s", per_step * static_cast<double>(total_ - done_)) : "";
  fmt::print(out_, "\r{}{}{}", bar(done_), eta, format_logs(logs));
  std::fflush(out_);
}

void ProgressBar::finish(const std::map<std::string, double>& logs) {
  if (!enabled_) return;
  const double elapsed = seconds(now_() - start_);
  const double ms_per_step = 1000.0 * elapsed / static_cast<double>(std::max<std::int64_t>(1, done_));
  const std::string line = fmt::format("{} - {:.0f}s {:.0f}ms/step{}",
                                       verbose_ == 1 ? bar(done_) : fmt::format("{} steps", done_),
                                       elapsed, ms_per_step, format_logs(logs));
  fmt::print(out_, "{}{}\n", live_ ? "\r" : "", line);
  std::fflush(out_);
}

}  // namespace tnt::detail
