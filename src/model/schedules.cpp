#include <tarantella/model/schedules.h>

#include <algorithm>
#include <cmath>

#include <tarantella/runtime/error.h>

namespace tnt::schedules {

Schedule Constant(double lr) {
  return [lr](std::int64_t) { return lr; };
}

Schedule ExponentialDecay(double lr, std::int64_t decay_steps, double rate, bool staircase) {
  TNT_CHECK(decay_steps > 0, "ExponentialDecay needs decay_steps > 0, got ", decay_steps);
  return [=](std::int64_t step) {
    double periods = static_cast<double>(step) / static_cast<double>(decay_steps);
    if (staircase) periods = std::floor(periods);
    return lr * std::pow(rate, periods);
  };
}

Schedule PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values) {
  TNT_CHECK(values.size() == boundaries.size() + 1, "PiecewiseConstantDecay needs one value more "
            "than boundaries, got ", boundaries.size(), " boundaries and ", values.size(),
            " values");
  TNT_CHECK(std::is_sorted(boundaries.begin(), boundaries.end()),
            "PiecewiseConstantDecay boundaries must be increasing");
  return [boundaries, values](std::int64_t step) {
    const auto i = std::upper_bound(boundaries.begin(), boundaries.end(), step - 1) -
                   boundaries.begin();
    return values[static_cast<std::size_t>(i)];
  };
}

Schedule WarmUp(Schedule schedule, std::int64_t warmup_steps, double start_fraction) {
  TNT_CHECK(static_cast<bool>(schedule), "WarmUp needs a schedule to warm up");
  TNT_CHECK(warmup_steps >= 0, "WarmUp needs warmup_steps >= 0, got ", warmup_steps);
  return [=](std::int64_t step) {
    const double target = schedule(step);
    if (step >= warmup_steps) return target;
    const double progress = static_cast<double>(step) / static_cast<double>(warmup_steps);
    return target * (start_fraction + (1.0 - start_fraction) * progress);
  };
}

Schedule LinearScalingWarmUp(double base_lr, int num_ranks, std::int64_t warmup_steps,
                             Schedule after) {
  TNT_CHECK(num_ranks >= 1, "LinearScalingWarmUp needs num_ranks >= 1, got ", num_ranks);
  Schedule scaled = after ? Schedule([after, num_ranks](std::int64_t s) { return after(s) * num_ranks; })
                          : Constant(base_lr * num_ranks);
  return WarmUp(scaled, warmup_steps, 1.0 / num_ranks);
}

}  // namespace tnt::schedules
