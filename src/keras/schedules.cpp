#include <tarantella/keras/schedules.h>
#include <tarantella/base/error.h>

#include <algorithm>
#include <cmath>

#include "keras/describe.h"
#include "keras/registry.h"

namespace tnt::schedules {

namespace {
// The description of a schedule built on `inner`: none if `inner` has none.
nlohmann::json inner_config(const Schedule& inner) {
  if (inner.config.empty()) return nullptr;
  return nlohmann::json::parse(inner.config);
}
}  // namespace

Schedule Constant(double lr) {
  return Schedule([lr](std::int64_t) { return lr; }, describe("Constant", {{"learning_rate", lr}}));
}

// ExponentialDecayOptions' fields under their config names (found by
// argument-dependent lookup from keras::fields_to_config / options_from).
template <typename Visit>
static void fields(ExponentialDecayOptions& o, Visit&& v) {
  v("learning_rate", o.learning_rate());
  v("decay_steps", o.decay_steps());
  v("decay_rate", o.decay_rate());
  v("staircase", o.staircase());
}

Schedule ExponentialDecay(double lr, std::int64_t decay_steps, double rate, bool staircase) {
  return ExponentialDecay(ExponentialDecayOptions(lr, decay_steps, rate).staircase(staircase));
}

Schedule ExponentialDecay(ExponentialDecayOptions o) {
  const double lr = o.learning_rate(), rate = o.decay_rate();
  const std::int64_t decay_steps = o.decay_steps();
  const bool staircase = o.staircase();
  TNT_CHECK(decay_steps > 0, "ExponentialDecay needs decay_steps > 0, got ", decay_steps);
  return Schedule(
      [=](std::int64_t step) {
        double periods = static_cast<double>(step) / static_cast<double>(decay_steps);
        if (staircase) periods = std::floor(periods);
        return lr * std::pow(rate, periods);
      },
      describe("ExponentialDecay", keras::fields_to_config(o)));
}

Schedule PiecewiseConstantDecay(std::vector<std::int64_t> boundaries, std::vector<double> values) {
  TNT_CHECK(values.size() == boundaries.size() + 1,
            "PiecewiseConstantDecay needs one value more "
            "than boundaries, got ",
            boundaries.size(), " boundaries and ", values.size(), " values");
  TNT_CHECK(std::is_sorted(boundaries.begin(), boundaries.end()),
            "PiecewiseConstantDecay boundaries must be increasing");
  return Schedule(
      [boundaries, values](std::int64_t step) {
        const auto i =
            std::upper_bound(boundaries.begin(), boundaries.end(), step - 1) - boundaries.begin();
        return values[static_cast<std::size_t>(i)];
      },
      describe("PiecewiseConstantDecay", {{"boundaries", boundaries}, {"values", values}}));
}

Schedule WarmUp(Schedule schedule, std::int64_t warmup_steps, double start_fraction) {
  TNT_CHECK(static_cast<bool>(schedule), "WarmUp needs a schedule to warm up");
  TNT_CHECK(warmup_steps >= 0, "WarmUp needs warmup_steps >= 0, got ", warmup_steps);
  const nlohmann::json inner = inner_config(schedule);
  std::string config;
  if (!inner.is_null()) {
    config = describe(
        "WarmUp",
        {{"schedule", inner}, {"warmup_steps", warmup_steps}, {"start_fraction", start_fraction}});
  }
  return Schedule(
      [=](std::int64_t step) {
        const double target = schedule(step);
        if (step >= warmup_steps) return target;
        const double progress = static_cast<double>(step) / static_cast<double>(warmup_steps);
        return target * (start_fraction + (1.0 - start_fraction) * progress);
      },
      config);
}

Schedule LinearScalingWarmUp(double base_lr, int num_ranks, std::int64_t warmup_steps,
                             Schedule after) {
  return LinearScalingWarmUp(
      LinearScalingWarmUpOptions(base_lr, num_ranks, warmup_steps).after(std::move(after)));
}

Schedule LinearScalingWarmUp(LinearScalingWarmUpOptions o) {
  const double base_lr = o.base_learning_rate();
  const int num_ranks = o.num_ranks();
  const std::int64_t warmup_steps = o.warmup_steps();
  const Schedule after = o.after();
  TNT_CHECK(num_ranks >= 1, "LinearScalingWarmUp needs num_ranks >= 1, got ", num_ranks);
  Schedule scaled =
      after ? Schedule([after, num_ranks](std::int64_t s) { return after(s) * num_ranks; })
            : Constant(base_lr * num_ranks);
  Schedule result = WarmUp(scaled, warmup_steps, 1.0 / num_ranks);
  const nlohmann::json inner = after ? inner_config(after) : nlohmann::json::object();
  result.config.clear();
  if (!inner.is_null()) {
    nlohmann::json c{
        {"base_learning_rate", base_lr}, {"num_ranks", num_ranks}, {"warmup_steps", warmup_steps}};
    if (after) c["after"] = inner;
    result.config = describe("LinearScalingWarmUp", c);
  }
  return result;
}

namespace {
using json = nlohmann::json;
using keras::field;
using Step = std::int64_t;

Schedule exponential_decay_from(const json& c) {
  const char* where = "schedule ExponentialDecay";
  return ExponentialDecay(keras::options_from(
      where, c,
      ExponentialDecayOptions(field<double>(where, c, "learning_rate"),
                              field<Step>(where, c, "decay_steps"),
                              field<double>(where, c, "decay_rate"))));
}

Schedule warm_up_from(const json& c) {
  const char* where = "schedule WarmUp";
  return keras::with_or_without<double>(where, c, "start_fraction", [&](auto... fraction) {
    return WarmUp(from_config(field<json>(where, c, "schedule")),
                  field<Step>(where, c, "warmup_steps"), fraction...);
  });
}

Schedule linear_scaling_warm_up_from(const json& c) {
  const char* where = "schedule LinearScalingWarmUp";
  LinearScalingWarmUpOptions o(field<double>(where, c, "base_learning_rate"),
                               field<int>(where, c, "num_ranks"),
                               field<Step>(where, c, "warmup_steps"));
  if (c.contains("after")) o.after(from_config(c.at("after")));
  return LinearScalingWarmUp(o);
}

const keras::Registry<Schedule>& registry() {
  static const auto* r = new keras::Registry<Schedule>(  // never destroyed, as the layers'
      "learning-rate schedule", keras::compile_part_fix("a schedule"),
      {{"Constant",
        [](const json& c) {
          return Constant(field<double>("schedule Constant", c, "learning_rate"));
        }},
       {"ExponentialDecay", exponential_decay_from},
       {"PiecewiseConstantDecay",
        [](const json& c) {
          const char* where = "schedule PiecewiseConstantDecay";
          return PiecewiseConstantDecay(field<std::vector<Step>>(where, c, "boundaries"),
                                        field<std::vector<double>>(where, c, "values"));
        }},
       {"WarmUp", warm_up_from},
       {"LinearScalingWarmUp", linear_scaling_warm_up_from}});
  return *r;
}
}  // namespace

Schedule from_config(const json& description) { return registry().read(description); }

}  // namespace tnt::schedules
