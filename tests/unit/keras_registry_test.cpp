// The Keras collection's registries: every built-in optimizer, loss, metric
// and schedule rebuilt by its kind's from_config is the same object (the
// same description, byte for byte, and the same behaviour); descriptions
// written before the options structs still read; unknown class names and
// bad fields are errors naming them; and the optimizers' options-struct and
// positional forms build identical optimizers.
#include <gtest/gtest.h>
#include <tarantella/base/argument_error.h>
#include <tarantella/tarantella.h>
#include <torch/torch.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace {

namespace O = tnt::optimizers;
namespace L = tnt::losses;
namespace M = tnt::metrics;
namespace S = tnt::schedules;
namespace TL = tnt::layers;
using json = nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "(no error)";
}

void expect_names(const std::string& error, std::vector<std::string> parts) {
  for (const auto& part : parts) EXPECT_NE(error.find(part), std::string::npos) << error;
}

// ---- optimizers -------------------------------------------------------------

// The weights after two steps of `factory`'s optimizer from fixed weights
// and gradients.
torch::Tensor two_steps(const O::Factory& factory) {
  torch::Tensor w = torch::linspace(-1, 1, 6).requires_grad_(true);
  auto optimizer = factory({w});
  for (int step = 0; step < 2; ++step) {
    w.mutable_grad() = torch::linspace(0.5, -0.3, 6) * (step + 1);
    optimizer->step();
  }
  return w.detach();
}

// The options of the optimizer's only parameter group, compared through
// LibTorch's own operator== of each options type.
bool same_group_options(const O::Factory& a, const O::Factory& b) {
  torch::Tensor w = torch::zeros({2}, torch::requires_grad());
  const auto built_a = a({w});
  const auto built_b = b({w});
  const auto& x = built_a->param_groups().at(0).options();
  const auto& y = built_b->param_groups().at(0).options();
  namespace optim = torch::optim;
  if (auto* p = dynamic_cast<const optim::SGDOptions*>(&x)) {
    return *p == dynamic_cast<const optim::SGDOptions&>(y);
  }
  if (auto* p = dynamic_cast<const optim::AdamOptions*>(&x)) {
    return *p == dynamic_cast<const optim::AdamOptions&>(y);
  }
  if (auto* p = dynamic_cast<const optim::AdamWOptions*>(&x)) {
    return *p == dynamic_cast<const optim::AdamWOptions&>(y);
  }
  if (auto* p = dynamic_cast<const optim::RMSpropOptions*>(&x)) {
    return *p == dynamic_cast<const optim::RMSpropOptions&>(y);
  }
  if (auto* p = dynamic_cast<const optim::AdagradOptions*>(&x)) {
    return *p == dynamic_cast<const optim::AdagradOptions&>(y);
  }
  ADD_FAILURE() << "an optimizer type this test does not know";
  return false;
}

std::vector<O::Factory> builtin_optimizers() {
  return {
      O::SGD(0.1),
      O::SGD(O::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-4)),
      O::Adam(),
      O::Adam(
          O::AdamOptions().learning_rate(1e-2).beta1(0.8).beta2(0.99).epsilon(1e-6).weight_decay(
              1e-3)),
      O::AdamW(),
      O::AdamW(O::AdamWOptions().learning_rate(3e-3).weight_decay(0.1).beta2(0.95)),
      O::RMSprop(),
      O::RMSprop(O::RMSpropOptions().learning_rate(1e-2).rho(0.8).momentum(0.5)),
      O::Adagrad(),
      O::Adagrad(O::AdagradOptions().learning_rate(0.05).initial_accumulator_value(0.2))};
}

TEST(KerasRegistry, EveryBuiltInOptimizerRoundTrips) {
  for (const O::Factory& f : builtin_optimizers()) {
    SCOPED_TRACE(f.config);
    const O::Factory g = O::from_config(json::parse(f.config));
    EXPECT_EQ(g.config, f.config);
    EXPECT_TRUE(same_group_options(f, g));
    EXPECT_TRUE(torch::equal(two_steps(f), two_steps(g)));
  }
}

TEST(KerasRegistry, OptionsAndPositionalFormsBuildTheSameOptimizer) {
  const std::vector<std::pair<O::Factory, O::Factory>> pairs = {
      {O::SGD(0.05, 0.9, true, 1e-4),
       O::SGD(O::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(1e-4))},
      {O::SGD(0.3), O::SGD(O::SGDOptions(0.3))},
      {O::Adam(1e-2, 0.8, 0.99, 1e-6, 1e-3),
       O::Adam(
           O::AdamOptions().learning_rate(1e-2).beta1(0.8).beta2(0.99).epsilon(1e-6).weight_decay(
               1e-3))},
      {O::Adam(1e-3), O::Adam()},
      {O::AdamW(3e-3, 0.1, 0.85, 0.95, 1e-8),
       O::AdamW(
           O::AdamWOptions().learning_rate(3e-3).weight_decay(0.1).beta1(0.85).beta2(0.95).epsilon(
               1e-8))},
      {O::AdamW(1e-3), O::AdamW()},
      {O::RMSprop(1e-2, 0.8, 0.5, 1e-6),
       O::RMSprop(O::RMSpropOptions().learning_rate(1e-2).rho(0.8).momentum(0.5).epsilon(1e-6))},
      {O::RMSprop(1e-3), O::RMSprop()},
      {O::Adagrad(0.05, 0.2),
       O::Adagrad(O::AdagradOptions().learning_rate(0.05).initial_accumulator_value(0.2))},
      {O::Adagrad(1e-3), O::Adagrad()}};
  for (const auto& [positional, options] : pairs) {
    SCOPED_TRACE(options.config);
    EXPECT_EQ(positional.config, options.config);
    EXPECT_TRUE(same_group_options(positional, options));
  }
}

// The descriptions as the factories wrote them before the options structs
// (saved models hold these): they read back and are written again unchanged.
TEST(KerasRegistry, OptimizerDescriptionsKeepTheirFormat) {
  const std::vector<std::pair<O::Factory, std::string>> written = {
      {O::SGD(0.1),
       R"({"class_name":"SGD","config":{"learning_rate":0.1,"momentum":0.0,"nesterov":false,)"
       R"("weight_decay":0.0}})"},
      {O::Adam(), R"({"class_name":"Adam","config":{"beta_1":0.9,"beta_2":0.999,"epsilon":1e-07,)"
                  R"("learning_rate":0.001,"weight_decay":0.0}})"},
      {O::AdamW(), R"({"class_name":"AdamW","config":{"beta_1":0.9,"beta_2":0.999,"epsilon":1e-07,)"
                   R"("learning_rate":0.001,"weight_decay":0.01}})"},
      {O::RMSprop(), R"({"class_name":"RMSprop","config":{"epsilon":1e-07,"learning_rate":0.001,)"
                     R"("momentum":0.0,"rho":0.9}})"},
      {O::Adagrad(), R"({"class_name":"Adagrad","config":{"initial_accumulator_value":0.1,)"
                     R"("learning_rate":0.001}})"}};
  for (const auto& [factory, text] : written) {
    EXPECT_EQ(factory.config, text);
    EXPECT_EQ(O::from_config(json::parse(text)).config, text);
  }
}

TEST(KerasRegistry, AFieldLeftOutTakesTheOptionsDefault) {
  const json adam = {{"class_name", "Adam"}, {"config", {{"learning_rate", 0.01}}}};
  EXPECT_EQ(O::from_config(adam).config, O::Adam(O::AdamOptions().learning_rate(0.01)).config);
  const json adamw = {{"class_name", "AdamW"}, {"config", json::object()}};
  EXPECT_EQ(O::from_config(adamw).config, O::AdamW().config);
  // SGD's learning rate has no default.
  expect_names(error_of([] {
                 O::from_config({{"class_name", "SGD"}, {"config", json::object()}});
               }),
               {"SGD", "\"learning_rate\""});
  expect_names(error_of([] {
                 O::from_config({{"class_name", "Adam"}, {"config", {{"beta_1", "high"}}}});
               }),
               {"Adam", "\"beta_1\"", "wrong type"});
}

// ---- losses, metrics, schedules ---------------------------------------------

struct LossCase {
  L::Loss loss;
  torch::Tensor y_pred, y_true;
};

std::vector<LossCase> builtin_losses() {
  const torch::Tensor logits = torch::tensor({{2.0, -1.0, 0.5}, {0.1, 0.2, 3.0}});
  const torch::Tensor labels = torch::tensor({0, 2});
  const torch::Tensor one_hot = torch::tensor({{1.0, 0.0, 0.0}, {0.0, 0.0, 1.0}});
  const torch::Tensor probabilities = torch::softmax(logits, 1);
  const torch::Tensor values = torch::tensor({0.3, -1.2, 2.5});
  const torch::Tensor targets = torch::tensor({0.0, 1.0, 1.0});
  const auto probabilities_in = L::LossOptions().from_logits(false);
  return {{L::SparseCategoricalCrossentropy(), logits, labels},
          {L::SparseCategoricalCrossentropy(probabilities_in), probabilities, labels},
          {L::CategoricalCrossentropy(), logits, one_hot},
          {L::CategoricalCrossentropy(probabilities_in), probabilities, one_hot},
          {L::BinaryCrossentropy(), values, targets},
          {L::BinaryCrossentropy(probabilities_in), torch::sigmoid(values), targets},
          {L::NLLLoss(), torch::log_softmax(logits, 1), labels},
          {L::MeanSquaredError(), values, targets},
          {L::MeanAbsoluteError(), values, targets},
          {L::Huber(), values, targets},
          {L::Huber(L::LossOptions().delta(0.5)), values, targets}};
}

TEST(KerasRegistry, EveryBuiltInLossRoundTrips) {
  for (const LossCase& c : builtin_losses()) {
    SCOPED_TRACE(c.loss.config);
    const L::Loss rebuilt = L::from_config(json::parse(c.loss.config));
    EXPECT_EQ(rebuilt.config, c.loss.config);
    EXPECT_EQ(rebuilt.name, c.loss.name);
    EXPECT_TRUE(torch::equal(rebuilt(c.y_pred, c.y_true), c.loss(c.y_pred, c.y_true)));
  }
}

TEST(KerasRegistry, EveryBuiltInMetricRoundTrips) {
  const torch::Tensor scores = torch::tensor({{2.0, -1.0, 0.5}, {0.1, 0.2, 3.0}, {1.0, 0.9, 0.0}});
  const torch::Tensor labels = torch::tensor({0, 1, 1});
  const torch::Tensor values = torch::tensor({0.3, 0.7, 0.6});
  const torch::Tensor targets = torch::tensor({0.0, 1.0, 0.0});
  const std::vector<std::pair<M::Metric, std::pair<torch::Tensor, torch::Tensor>>> cases = {
      {M::Accuracy(), {scores, labels}},
      {M::SparseCategoricalAccuracy(), {scores, labels}},
      {M::CategoricalAccuracy(), {scores, torch::one_hot(labels, 3)}},
      {M::BinaryAccuracy(), {values, targets}},
      {M::BinaryAccuracy(0.65), {values, targets}},
      {M::TopKCategoricalAccuracy(), {scores, labels}},
      {M::TopKCategoricalAccuracy(2), {scores, labels}},
      {M::MeanSquaredError(), {values, targets}},
      {M::MeanAbsoluteError(), {values, targets}}};
  for (const auto& [metric, batch] : cases) {
    SCOPED_TRACE(metric.config);
    const M::Metric rebuilt = M::from_config(json::parse(metric.config));
    EXPECT_EQ(rebuilt.config, metric.config);
    EXPECT_EQ(rebuilt.name, metric.name);
    const torch::Tensor state = metric.update(batch.first, batch.second);
    EXPECT_TRUE(torch::equal(rebuilt.update(batch.first, batch.second), state));
    const std::vector<double> s = {state[0].item<double>(), state[1].item<double>()};
    EXPECT_EQ(rebuilt.result(s), metric.result(s));
  }
  // A field left out takes the factory's default argument.
  EXPECT_EQ(M::from_config({{"class_name", "TopKCategoricalAccuracy"}}).config,
            M::TopKCategoricalAccuracy().config);
}

// Accuracy's binary case and BinaryAccuracy without a threshold decide
// where the compiled loss does: at 0 after logits (BinaryCrossentropy's
// default), at 0.5 after probabilities; a threshold given stays, and a
// rebuilt description asks the loss again.
TEST(KerasRegistry, BinaryAccuracyTakesTheLossesThreshold) {
  EXPECT_EQ(L::BinaryCrossentropy().binary_threshold, 0.0);
  EXPECT_EQ(L::BinaryCrossentropy(L::LossOptions().from_logits(false)).binary_threshold, 0.5);
  EXPECT_FALSE(L::MeanSquaredError().binary_threshold.has_value());
  EXPECT_EQ(L::from_config(json::parse(L::BinaryCrossentropy().config)).binary_threshold, 0.0);
  const torch::Tensor logit = torch::tensor({0.25, -0.25});  // sigmoid: 0.56, 0.44
  const torch::Tensor target = torch::tensor({1.0, 0.0});
  const auto hits = [&](const M::Metric& m) { return m.update(logit, target)[0].item<double>(); };
  for (const M::Metric& m : {M::Accuracy(), M::BinaryAccuracy(),
                             M::from_config(json::parse(M::BinaryAccuracy().config))}) {
    SCOPED_TRACE(m.config);
    ASSERT_TRUE(m.at_threshold);
    EXPECT_EQ(hits(m), 1.0);  // at 0.5: 0.25 counts as 0, a miss
    EXPECT_EQ(hits(m.at_threshold(0.0)), 2.0);
    EXPECT_EQ(m.at_threshold(0.0).config, m.config);
    EXPECT_TRUE(m.at_threshold(0.0).at_threshold);
  }
  EXPECT_FALSE(M::BinaryAccuracy(0.5).at_threshold);
  EXPECT_FALSE(M::SparseCategoricalAccuracy().at_threshold);
}

// On a GPU the state must stay on the inputs' device: no host scalar stacked
// beside a device tensor (which stack() refuses). The meta device stands in
// for the GPU here: it refuses mixing with host tensors alike.
TEST(KerasRegistry, EveryBuiltInMetricKeepsItsStateOnTheInputsDevice) {
  const torch::Device meta(torch::kMeta);
  const torch::Tensor scores = torch::rand({4, 3}).to(meta);
  const torch::Tensor labels = torch::tensor({0, 1, 1, 2}).to(meta);
  const torch::Tensor values = torch::rand({4}).to(meta);
  const std::vector<std::pair<M::Metric, std::pair<torch::Tensor, torch::Tensor>>> cases = {
      {M::Accuracy(), {scores, labels}},
      {M::SparseCategoricalAccuracy(), {scores, labels}},
      {M::CategoricalAccuracy(), {scores, scores}},
      {M::BinaryAccuracy(), {values, values}},
      {M::TopKCategoricalAccuracy(2), {scores, labels}},
      {M::MeanSquaredError(), {values, values}}};  // abs (MeanAbsoluteError) has no meta kernel
  for (const auto& [metric, batch] : cases) {
    SCOPED_TRACE(metric.name);
    const torch::Tensor state = metric.update(batch.first, batch.second);
    EXPECT_EQ(state.device(), meta);
    EXPECT_EQ(state.numel(), metric.state_size);
  }
}

TEST(KerasRegistry, EveryBuiltInScheduleRoundTrips) {
  const std::vector<S::Schedule> schedules = {
      S::Constant(0.1),
      S::ExponentialDecay(0.1, 10, 0.5),
      S::ExponentialDecay(0.1, 10, 0.5, /*staircase=*/true),
      S::PiecewiseConstantDecay({5, 15}, {1.0, 0.5, 0.1}),
      S::WarmUp(S::ExponentialDecay(0.2, 7, 0.9, true), 5),
      S::WarmUp(S::Constant(0.3), 4, 0.25),
      S::LinearScalingWarmUp(0.05, 4, 10),
      S::LinearScalingWarmUp(0.05, 3, 6, S::PiecewiseConstantDecay({20}, {1.0, 0.1}))};
  for (const S::Schedule& s : schedules) {
    SCOPED_TRACE(s.config);
    const S::Schedule rebuilt = S::from_config(json::parse(s.config));
    EXPECT_EQ(rebuilt.config, s.config);
    for (std::int64_t step : {0, 1, 3, 5, 9, 10, 17, 40}) EXPECT_EQ(rebuilt(step), s(step));
  }
  // A field left out takes the factory's default argument.
  const json decay = {
      {"class_name", "ExponentialDecay"},
      {"config", {{"learning_rate", 0.1}, {"decay_steps", 10}, {"decay_rate", 0.5}}}};
  EXPECT_EQ(S::from_config(decay).config, S::ExponentialDecay(0.1, 10, 0.5).config);
  expect_names(error_of([] {
                 S::from_config({{"class_name", "WarmUp"}, {"config", {{"warmup_steps", 3}}}});
               }),
               {"WarmUp", "\"schedule\""});
}

TEST(KerasRegistry, ScheduleOptionsAndPositionalFormsAreTheSameSchedule) {
  const S::Schedule options = S::ExponentialDecay(S::ExponentialDecayOptions(0.1, 10, 0.5));
  EXPECT_EQ(options.config, S::ExponentialDecay(0.1, 10, 0.5).config);
  EXPECT_EQ(S::ExponentialDecay(S::ExponentialDecayOptions(0.1, 10, 0.5).staircase(true)).config,
            S::ExponentialDecay(0.1, 10, 0.5, true).config);
  const S::Schedule warm = S::LinearScalingWarmUp(
      S::LinearScalingWarmUpOptions(0.05, 3, 6).after(S::PiecewiseConstantDecay({20}, {1.0, 0.1})));
  const S::Schedule positional =
      S::LinearScalingWarmUp(0.05, 3, 6, S::PiecewiseConstantDecay({20}, {1.0, 0.1}));
  EXPECT_EQ(warm.config, positional.config);
  for (std::int64_t step : {0, 3, 6, 19, 25}) EXPECT_EQ(warm(step), positional(step));
  EXPECT_EQ(S::LinearScalingWarmUp(S::LinearScalingWarmUpOptions(0.05, 4, 10)).config,
            S::LinearScalingWarmUp(0.05, 4, 10).config);
}

// ---- layers -----------------------------------------------------------------

json layer_config(const TL::Layer& layer) {
  return {{"class_name", layer->class_name()}, {"config", layer->get_config()}};
}

TEST(KerasRegistry, LayerOptionsAndPositionalFormsDescribeTheSameLayer) {
  const std::vector<std::pair<TL::Layer, TL::Layer>> pairs = {
      {TL::Dense(TL::DenseOptions(4, 3).activation("relu")), TL::Dense(4, 3, "relu")},
      {TL::Dense(TL::DenseOptions(4, 3).use_bias(false)), TL::Dense(4, 3, "linear", false)},
      {TL::Conv2D(TL::Conv2DOptions(1, 6, 5).padding("same").activation("tanh")),
       TL::Conv2D(1, 6, 5, 1, "same", "tanh")},
      {TL::MaxPool2D(TL::Pool2DOptions().pool_size(3)), TL::MaxPool2D(3)},
      {TL::AvgPool2D(TL::Pool2DOptions().strides(1)), TL::AvgPool2D(2, 1)},
      {TL::BatchNorm(TL::BatchNormOptions(8).momentum(0.9)), TL::BatchNorm(8, 0.9)},
      {TL::SyncBatchNorm(TL::BatchNormOptions(8).epsilon(1e-5)), TL::SyncBatchNorm(8, 0.99, 1e-5)},
      {TL::LayerNorm(TL::LayerNormOptions({4, 2}).epsilon(1e-6)), TL::LayerNorm({4, 2}, 1e-6)}};
  for (const auto& [options, positional] : pairs) {
    SCOPED_TRACE(layer_config(positional).dump());
    EXPECT_EQ(layer_config(options), layer_config(positional));
    // And from_config rebuilds the same description.
    EXPECT_EQ(layer_config(TL::layer_from_config(layer_config(options))), layer_config(options));
  }
}

TEST(KerasRegistry, ALayerFieldLeftOutTakesTheOptionsDefault) {
  const json conv = {{"class_name", "Conv2D"},
                     {"config", {{"in_channels", 1}, {"filters", 2}, {"kernel_size", 3}}}};
  EXPECT_EQ(TL::layer_from_config(conv)->get_config(),
            TL::Conv2D(TL::Conv2DOptions(1, 2, 3))->get_config());
  EXPECT_EQ(TL::layer_from_config({{"class_name", "MaxPool2D"}})->get_config(),
            TL::MaxPool2D(TL::Pool2DOptions())->get_config());
  const json norm = {{"class_name", "BatchNorm"},
                     {"config", {{"num_features", 5}, {"epsilon", 1e-4}}}};
  EXPECT_EQ(TL::layer_from_config(norm)->get_config(),
            TL::BatchNorm(TL::BatchNormOptions(5).epsilon(1e-4))->get_config());
  // The defaults are the options structs' (Keras's for BatchNorm).
  EXPECT_EQ(TL::BatchNormOptions(1).momentum(), 0.99);
  EXPECT_EQ(TL::Conv2DOptions(1, 1, 1).padding(), "valid");
  // Required fields have no default; ill-typed fields name the layer and field.
  expect_names(error_of([] {
                 TL::layer_from_config({{"class_name", "Dense"}, {"config", {{"units", 3}}}});
               }),
               {"layer Dense", "\"in_features\""});
  expect_names(error_of([] {
                 TL::layer_from_config({{"class_name", "Conv2D"},
                                        {"config",
                                         {{"in_channels", 1},
                                          {"filters", 2},
                                          {"kernel_size", 3},
                                          {"strides", "two"}}}});
               }),
               {"layer Conv2D", "\"strides\"", "wrong type"});
}

// ---- unknown class names ----------------------------------------------------

TEST(KerasRegistry, UnknownClassNamesAreErrorsNamingThemAndTheKnownOnes) {
  const json nadam = {{"class_name", "Nadam"}, {"config", json::object()}};
  expect_names(error_of([&] { O::from_config(nadam); }),
               {"unknown optimizer class 'Nadam'", "Adam, AdamW", "SGD"});
  expect_names(error_of([] {
                 L::from_config({{"class_name", "Hinge"}});
               }),
               {"unknown loss class 'Hinge'", "Huber"});
  expect_names(error_of([] {
                 M::from_config({{"class_name", "AUC"}});
               }),
               {"unknown metric class 'AUC'", "BinaryAccuracy"});
  expect_names(error_of([] {
                 S::from_config({{"class_name", "CosineDecay"}});
               }),
               {"unknown learning-rate schedule class 'CosineDecay'", "ExponentialDecay"});
  // Not a description at all.
  expect_names(error_of([] { O::from_config(json::array()); }),
               {"optimizer description needs {\"class_name\""});
}

// ---- names: Keras's get() ---------------------------------------------------

// A name is a class name or one of Keras's names, kept as registry aliases;
// either gives the object with its options struct's defaults.
TEST(KerasRegistry, NamesAreClassNamesOrKerasAliasesWithTheDefaults) {
  EXPECT_EQ(O::get("adam").config, O::Adam().config);
  EXPECT_EQ(O::get("Adam").config, O::Adam().config);
  EXPECT_EQ(O::get("adamw").config, O::AdamW().config);
  EXPECT_EQ(O::get("rmsprop").config, O::RMSprop().config);
  EXPECT_EQ(O::get("adagrad").config, O::Adagrad().config);
  // SGD has no default learning rate; by name it takes Keras's, in any case.
  const json sgd = json::parse(O::get("sgd").config);
  EXPECT_EQ(sgd["config"]["learning_rate"].get<double>(), 0.01);
  EXPECT_EQ(O::get("SGD").config, O::get("sgd").config);
  EXPECT_EQ(sgd["config"]["momentum"].get<double>(), O::SGDOptions(1).momentum());

  EXPECT_EQ(L::get("mse").config, L::MeanSquaredError().config);
  EXPECT_EQ(L::get("mae").config, L::MeanAbsoluteError().config);
  EXPECT_EQ(L::get("sparse_categorical_crossentropy").config,
            L::SparseCategoricalCrossentropy().config);
  EXPECT_EQ(L::get("Huber").config, L::Huber().config);
  EXPECT_EQ(L::get("nll_loss").name, "nll_loss");

  EXPECT_EQ(M::get("acc").config, M::Accuracy().config);
  EXPECT_EQ(M::get("accuracy").config, M::Accuracy().config);
  EXPECT_EQ(M::get("top_k_categorical_accuracy").config, M::TopKCategoricalAccuracy().config);
  EXPECT_EQ(M::get("mse").name, "mean_squared_error");
}

TEST(KerasRegistry, AnUnknownNameIsAnArgumentErrorListingTheKnownNames) {
  EXPECT_THROW(L::get("no_such_loss"), tnt::ArgumentError);
  expect_names(error_of([] { L::get("no_such_loss"); }),
               {"loss='no_such_loss' is not known", "mse", "sparse_categorical_crossentropy",
                "Huber"});
  expect_names(error_of([] { M::get("f1"); }), {"metric='f1'", "accuracy", "mae"});
  expect_names(error_of([] { O::get("adamax"); }), {"optimizer='adamax'", "sgd", "adam", "Adam"});
}

// The names of mixed precision and gradient compression: one parser, which
// the compile configuration and Python's compile() both use.
TEST(CompileNames, MixedPrecisionAndCompressionNamesRoundTrip) {
  for (const auto p :
       {tnt::MixedPrecision::None, tnt::MixedPrecision::BFloat16, tnt::MixedPrecision::Float16}) {
    EXPECT_EQ(tnt::mixed_precision_from_name(tnt::mixed_precision_name(p)), p);
  }
  for (const auto c : {tnt::dp::Compression::None, tnt::dp::Compression::Float16,
                       tnt::dp::Compression::BFloat16}) {
    EXPECT_EQ(tnt::compression_from_name(tnt::compression_name(c)), c);
  }
  EXPECT_THROW(tnt::mixed_precision_from_name("fp8"), tnt::ArgumentError);
  expect_names(error_of([] { tnt::mixed_precision_from_name("fp8"); }),
               {"mixed_precision='fp8'", "'bfloat16'"});
  expect_names(error_of([] { tnt::compression_from_name("int4"); }),
               {"compression='int4'", "'float16'"});
}

}  // namespace
