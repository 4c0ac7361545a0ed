// Private: the order in which one pipeline stage runs the forwards and
// backwards of a global batch's micro-batches.
//
// GPipe (fill-drain): every forward, then every backward in reverse. A
// stage holds the activations of all M micro-batches at once.
//
// 1F1B (the default): stage s of P first runs min(P - s - 1, M) warm-up
// forwards, then alternates one forward and one backward, then drains the
// remaining backwards. Its backwards start as soon as the last stage has
// the first micro-batch's loss, so a stage holds at most P - s micro-batches'
// activations (P on the first stage), not M. Both schedules have the same
// bubble with equal stage times: (P - 1) / (M + P - 1) of a step idle.
//
// Backwards run in micro-batch order in both, so the gradient sums (and so
// the weights) do not depend on the schedule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tnt::stages {

enum class Schedule { one_f_one_b, gpipe };

/// "1f1b" or "gpipe" (the names users give).
Schedule schedule_from_name(const std::string& name);
const char* to_string(Schedule schedule);

struct Action {
  enum Kind { forward, backward };
  Kind kind;
  int micro_batch;
  bool operator==(const Action& other) const {
    return kind == other.kind && micro_batch == other.micro_batch;
  }
};

/// Stage `stage`'s actions for `micro_batches` micro-batches.
std::vector<Action> stage_actions(Schedule schedule, int stage, int stages, int micro_batches);

/// The most micro-batches whose activations a stage holds at once (a
/// forward done, its backward not yet).
int peak_in_flight(const std::vector<Action>& actions);

/// The idle share of a step with equal stage times: (P-1) / (M+P-1).
double bubble_fraction(int stages, int micro_batches);

/// The default micro-batch count for P stages: 4 (P - 1), at least 1,
/// which keeps the bubble at 1/5 of a step or less.
int default_micro_batches(int stages);

/// Checks that `micro_batches` micro-batches of a replica's `samples`
/// samples leave none empty; throws tnt::ArgumentError naming both counts.
void check_micro_batches(int micro_batches, std::int64_t samples);

}  // namespace tnt::stages
