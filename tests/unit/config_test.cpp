#include <gtest/gtest.h>

#include <map>

#include <tarantella/base/config.h>
#include <tarantella/base/error.h>

namespace {

tnt::Config resolve(const std::map<std::string, std::string>& env) {
  return tnt::Config::from_lookup([&](const std::string& name) -> std::optional<std::string> {
    auto it = env.find(name);
    if (it == env.end()) return std::nullopt;
    return it->second;
  });
}

std::string error_of(const std::map<std::string, std::string>& env) {
  try {
    resolve(env);
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Config, DefaultsWhenNothingIsSet) {
  const tnt::Config c = resolve({});
  EXPECT_EQ(c.log_level, tnt::LogLevel::Warning);
  EXPECT_FALSE(c.log_on_all_devices);
  EXPECT_FALSE(c.output_on_all_devices);
  EXPECT_FALSE(c.tensorboard_on_all_devices);
  EXPECT_EQ(c.fusion_threshold_bytes, 32u * 1024u);
  EXPECT_DOUBLE_EQ(c.comm_timeout_seconds, 300.0);
  EXPECT_FALSE(c.num_threads.has_value());
  EXPECT_FALSE(c.use_gpu.has_value());
}

TEST(Config, ReadsEveryVariable) {
  const tnt::Config c = resolve({{"TNT_LOG_LEVEL", "debug"},
                                 {"TNT_LOG_ON_ALL_DEVICES", "true"},
                                 {"TNT_OUTPUT_ON_ALL_DEVICES", "1"},
                                 {"TNT_TENSORBOARD_ON_ALL_DEVICES", "yes"},
                                 {"TNT_FUSION_THRESHOLD", "64"},
                                 {"TNT_COMM_TIMEOUT", "2.5"},
                                 {"OMP_NUM_THREADS", "3"},
                                 {"TNT_USE_GPU", "false"}});
  EXPECT_EQ(c.log_level, tnt::LogLevel::Debug);
  EXPECT_TRUE(c.log_on_all_devices);
  EXPECT_TRUE(c.output_on_all_devices);
  EXPECT_TRUE(c.tensorboard_on_all_devices);
  EXPECT_EQ(c.fusion_threshold_bytes, 64u * 1024u);
  EXPECT_DOUBLE_EQ(c.comm_timeout_seconds, 2.5);
  EXPECT_EQ(c.num_threads, 3);
  EXPECT_EQ(c.use_gpu, false);
}

// What the launcher exports when it found GPUs: the rank's LibTorch decides.
// Only an explicit true is a demand (train/engine/engine.cpp refuses it without CUDA).
TEST(Config, UseGpuAutoMeansUnset) {
  EXPECT_FALSE(resolve({{"TNT_USE_GPU", "auto"}}).use_gpu.has_value());
  EXPECT_FALSE(resolve({{"TNT_USE_GPU", " AUTO "}}).use_gpu.has_value());
  EXPECT_EQ(resolve({{"TNT_USE_GPU", "true"}}).use_gpu, true);
}

TEST(Config, FusionThresholdZeroMeansOneAllreducePerTensor) {
  EXPECT_EQ(resolve({{"TNT_FUSION_THRESHOLD", "0"}}).fusion_threshold_bytes, 0u);
}

// Auto-tuning tries overlap on and off only when the user did not choose.
TEST(Config, OverlapRemembersWhetherItWasSet) {
  EXPECT_TRUE(resolve({}).overlap);
  EXPECT_FALSE(resolve({}).overlap_set);
  const tnt::Config on = resolve({{"TNT_OVERLAP", "true"}});
  EXPECT_TRUE(on.overlap);
  EXPECT_TRUE(on.overlap_set);
  const tnt::Config off = resolve({{"TNT_OVERLAP", "0"}});
  EXPECT_FALSE(off.overlap);
  EXPECT_TRUE(off.overlap_set);
}

TEST(Config, MallocTuningIsOnUnlessSwitchedOff) {
  EXPECT_TRUE(resolve({}).malloc_tuning);
  EXPECT_FALSE(resolve({{"TNT_MALLOC_TUNING", "false"}}).malloc_tuning);
  EXPECT_TRUE(resolve({}).stack_service);
  EXPECT_FALSE(resolve({{"TNT_STACK_SERVICE", "0"}}).stack_service);
  EXPECT_THROW(resolve({{"TNT_MALLOC_TUNING", "sometimes"}}), tnt::Error);
}

// The straggler report's longest window: 20 steps unless set (a report by
// step 41 of a fit, docs/performance.md); 0 switches it off.
TEST(Config, StragglerWindowDefaultsTo20AndZeroIsOff) {
  EXPECT_EQ(resolve({}).straggler_window, 20);
  EXPECT_EQ(resolve({{"TNT_STRAGGLER_WINDOW", "10"}}).straggler_window, 10);
  EXPECT_EQ(resolve({{"TNT_STRAGGLER_WINDOW", "0"}}).straggler_window, 0);
  EXPECT_THROW(resolve({{"TNT_STRAGGLER_WINDOW", "-5"}}), tnt::Error);
}

TEST(Config, TntNumThreadsOverridesOmpNumThreads) {
  EXPECT_EQ(resolve({{"OMP_NUM_THREADS", "3"}, {"TNT_NUM_THREADS", "5"}}).num_threads, 5);
}

TEST(Config, BadValuesNameTheVariableAndTheValue) {
  struct Case {
    const char* var;
    const char* value;
    const char* hint;
  };
  for (const Case& c : {Case{"TNT_LOG_LEVEL", "LOUD", "DEBUG, INFO, WARNING or ERROR"},
                        Case{"TNT_LOG_ON_ALL_DEVICES", "maybe", "true or false"},
                        Case{"TNT_FUSION_THRESHOLD", "-1", "KiB"},
                        Case{"TNT_FUSION_THRESHOLD", "12abc", "KiB"},
                        Case{"TNT_COMM_TIMEOUT", "0", "seconds"},
                        Case{"TNT_COMM_TIMEOUT", "soon", "seconds"},
                        Case{"OMP_NUM_THREADS", "0", "thread count"},
                        Case{"TNT_USE_GPU", "", "true or false"},
                        Case{"TNT_STRAGGLER_WINDOW", "often", "number of steps"}}) {
    const std::string message = error_of({{c.var, c.value}});
    EXPECT_NE(message.find(std::string(c.var) + "='" + c.value + "'"), std::string::npos)
        << message;
    EXPECT_NE(message.find(c.hint), std::string::npos) << message;
  }
}

}  // namespace
