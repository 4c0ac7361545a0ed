// Learning-rate schedules: functions of the global step (counted from the
// start of training, over all epochs). The Model sets the rate of every
// parameter group before each optimizer step.
#pragma once

#include <cstdint>
#include <cstddef>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include <tarantella/base/arg.h>

namespace tnt::schedules {

/// The learning rate as a function of the global step. The built-in
/// schedules carry a description (`config`, JSON) so that a saved model can
/// be recompiled by load_model; any callable converts to a Schedule
/// (without one).
/// Example: auto s = tnt::schedules::ExponentialDecay(0.1, 1000, 0.96);  s(2000) == 0.1 * 0.96^2
struct Schedule {
  using Fn = std::function<double(std::int64_t step)>;
  Schedule() = default;
  Schedule(std::nullptr_t) {}  // NOLINT: "no schedule", as for std::function
  Schedule(Fn fn, std::string config) : fn(std::move(fn)), config(std::move(config)) {}
  template <typename F, typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Schedule> &&
                                                    !std::is_same_v<std::decay_t<F>, std::nullptr_t> &&
                                                    std::is_constructible_v<Fn, F>>>
  Schedule(F&& f) : fn(std::forward<F>(f)) {}  // NOLINT: implicit, like std::function
  double operator()(std::int64_t step) const { return fn(step); }
  explicit operator bool() const { return static_cast<bool>(fn); }

  Fn fn;
  /// {"class_name": ..., "config": {...}}; empty for a user function.
  std::string config;
};

Schedule Constant(double learning_rate);
/// ExponentialDecay's arguments: lr * rate^(step / decay_steps), floored to
/// whole periods if staircase.
/// Example: ExponentialDecay(ExponentialDecayOptions(0.1, 1000, 0.96).staircase(true))
struct ExponentialDecayOptions {
  ExponentialDecayOptions(double learning_rate, std::int64_t decay_steps, double decay_rate)
      : learning_rate_(learning_rate), decay_steps_(decay_steps), decay_rate_(decay_rate) {}
  TNT_ARG(double, learning_rate);
  TNT_ARG(std::int64_t, decay_steps);
  TNT_ARG(double, decay_rate);
  TNT_ARG(bool, staircase) = false;
};
Schedule ExponentialDecay(ExponentialDecayOptions options);
Schedule ExponentialDecay(double learning_rate, std::int64_t decay_steps, double decay_rate,
                          bool staircase = ExponentialDecayOptions(1, 1, 1).staircase());
/// values[i] while step < boundaries[i]; values.back() after the last.
Schedule PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values);
/// Linear warm-up from `start_fraction` of the schedule's value to the full
/// value over `warmup_steps`, then `schedule`.
Schedule WarmUp(Schedule schedule, std::int64_t warmup_steps, double start_fraction = 0.0);
/// LinearScalingWarmUp's arguments: the linear scaling rule with warm-up
/// (Goyal et al.). It starts at `base_learning_rate` (tuned for one rank)
/// and rises linearly over `warmup_steps` to base * `num_ranks`, then
/// follows `after` scaled the same way (constant if none).
/// Example: LinearScalingWarmUp(LinearScalingWarmUpOptions(0.1, tnt::get_size(), 500)
///                                  .after(ExponentialDecay(0.1, 1000, 0.9)))
struct LinearScalingWarmUpOptions {
  LinearScalingWarmUpOptions(double base_learning_rate, int num_ranks, std::int64_t warmup_steps)
      : base_learning_rate_(base_learning_rate), num_ranks_(num_ranks),
        warmup_steps_(warmup_steps) {}
  TNT_ARG(double, base_learning_rate);
  TNT_ARG(int, num_ranks);
  TNT_ARG(std::int64_t, warmup_steps);
  TNT_ARG(Schedule, after) = nullptr;
};
Schedule LinearScalingWarmUp(LinearScalingWarmUpOptions options);
Schedule LinearScalingWarmUp(double base_learning_rate, int num_ranks, std::int64_t warmup_steps,
                             Schedule after = nullptr);

/// Rebuilds a built-in schedule (and the schedules inside it) from its
/// description (Schedule::config, parsed); a field left out takes the
/// factory's default. An unknown class name is a tnt::Error naming it and
/// the registered ones.
/// Example: auto s = tnt::schedules::from_config(nlohmann::json::parse(Constant(0.1).config));
Schedule from_config(const nlohmann::json& description);

}  // namespace tnt::schedules
