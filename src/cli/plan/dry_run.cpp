// Dry-run formatting; see dry_run.h.
#include "plan/dry_run.h"

#include "parse/shell_words.h"

namespace tnt::cli {

std::string format_dry_run(const LaunchPlan& plan) {
  std::string text;
  for (const auto& note : plan.notes) text += "# " + note + "\n";
  if (!plan.environment.empty()) {
    text += "env \\\n";
    for (const auto& e : plan.environment)
      text += "  " + shell_quote(e.name + "=" + e.value) + " \\\n";
    text += "  ";
  }
  return text + shell_join(plan.argv) + "\n";
}

}  // namespace tnt::cli
