// The stage schedules (schedule.h): GPipe's fill-drain and 1F1B's
// warm-up, steady alternation and drain.
#include "stages/schedule.h"

#include <algorithm>

#include <tarantella/base/argument_error.h>

namespace tnt::stages {

Schedule schedule_from_name(const std::string& name) {
  if (name == "1f1b") return Schedule::one_f_one_b;
  if (name == "gpipe") return Schedule::gpipe;
  TNT_CHECK_ARG(false, "schedule='", name, "' is not a pipeline schedule: use '1f1b' (the ",
                "default, least memory) or 'gpipe'");
  return Schedule::one_f_one_b;
}

const char* to_string(Schedule schedule) {
  return schedule == Schedule::gpipe ? "gpipe" : "1f1b";
}

namespace {

void check_counts(int stage, int stages, int micro_batches) {
  TNT_CHECK_ARG(stages >= 1, "pipeline_stages must be at least 1, got ", stages);
  TNT_CHECK_ARG(stage >= 0 && stage < stages, "stage ", stage, " is not one of ", stages,
                " stages");
  TNT_CHECK_ARG(micro_batches >= 1, "micro_batches must be at least 1, got ", micro_batches);
}

}  // namespace

std::vector<Action> stage_actions(Schedule schedule, int stage, int stages, int micro_batches) {
  check_counts(stage, stages, micro_batches);
  std::vector<Action> out;
  const int m = micro_batches;
  const int warmup = schedule == Schedule::gpipe ? m : std::min(stages - stage - 1, m);
  int next_forward = 0;
  int next_backward = 0;
  for (; next_forward < warmup; ++next_forward) out.push_back({Action::forward, next_forward});
  while (next_forward < m) {  // steady: one forward, one backward
    out.push_back({Action::forward, next_forward++});
    out.push_back({Action::backward, next_backward++});
  }
  while (next_backward < m) out.push_back({Action::backward, next_backward++});
  return out;
}

int peak_in_flight(const std::vector<Action>& actions) {
  int held = 0;
  int peak = 0;
  for (const Action& a : actions) {
    held += a.kind == Action::forward ? 1 : -1;
    peak = std::max(peak, held);
  }
  return peak;
}

double bubble_fraction(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

int default_micro_batches(int stages) { return std::max(1, 4 * (stages - 1)); }

void check_micro_batches(int micro_batches, std::int64_t samples) {
  TNT_CHECK_ARG(micro_batches >= 1, "micro_batches must be at least 1, got ", micro_batches);
  TNT_CHECK_ARG(samples >= micro_batches, "micro_batches=", micro_batches, " would leave ",
                micro_batches - samples, " of them empty: a replica gets ", samples,
                " samples of each global batch; use at most ", samples,
                " micro-batches or a larger batch size");
}

}  // namespace tnt::stages
