// The layer registry: shapes and parameter names of each layer, the JSON
// round trip of a Sequential, errors naming the layer and the field, user
// layers through register_layer, and the descriptions that built-in
// optimizers, losses, metrics and schedules carry for load_model.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <tarantella/tarantella.h>

namespace {

namespace TL = tnt::layers;
using json = nlohmann::json;

TL::Sequential lenet() {
  return TL::Sequential({TL::Conv2D(1, 6, 5, 1, "same", "relu"), TL::MaxPool2D(2),
                        TL::Conv2D(6, 16, 5, 1, "valid", "relu"), TL::AvgPool2D(2), TL::Flatten(),
                        TL::Dense(16 * 5 * 5, 120, "relu"), TL::BatchNorm(120), TL::Dropout(0.25),
                        TL::Dense(120, 10), TL::Activation("log_softmax")});
}

TEST(Layers, ForwardShapesAndPyTorchStyleNames) {
  TL::Sequential net = lenet();
  const torch::Tensor out = net->forward(torch::randn({3, 1, 28, 28}));
  EXPECT_EQ(out.sizes(), (std::vector<std::int64_t>{3, 10}));
  // log_softmax: rows sum to one in probability space.
  EXPECT_TRUE(torch::allclose(out.exp().sum(-1), torch::ones({3}), 1e-5, 1e-5));
  const auto params = net->named_parameters();
  EXPECT_TRUE(params.contains("0.weight"));
  EXPECT_TRUE(params.contains("5.bias"));
  EXPECT_EQ(params["0.weight"].sizes(), (std::vector<std::int64_t>{6, 1, 5, 5}));
  const auto buffers = net->named_buffers();
  EXPECT_TRUE(buffers.contains("6.running_mean"));
  EXPECT_TRUE(buffers.contains("6.num_batches_tracked"));
}

TEST(Layers, SameAndValidPaddingFollowKeras) {
  for (std::int64_t stride : {1, 2, 3}) {
    TL::Sequential same({TL::Conv2D(2, 4, 3, stride, "same")});
    const torch::Tensor y = same->forward(torch::randn({1, 2, 10, 7}));
    EXPECT_EQ(y.size(2), (10 + stride - 1) / stride) << "stride " << stride;
    EXPECT_EQ(y.size(3), (7 + stride - 1) / stride) << "stride " << stride;
  }
  TL::Sequential valid({TL::Conv2D(2, 4, 3, 1, "valid")});
  EXPECT_EQ(valid->forward(torch::randn({1, 2, 10, 7})).size(2), 8);
}

TEST(Layers, BatchNormUsesKerasMomentumAndMatchesPyTorch) {
  TL::Sequential ours({TL::BatchNorm(4, /*momentum=*/0.9, /*epsilon=*/1e-5)});
  torch::nn::BatchNorm1d theirs(torch::nn::BatchNorm1dOptions(4).momentum(0.1).eps(1e-5));
  const torch::Tensor x = torch::randn({8, 4}) * 3 + 1;
  EXPECT_TRUE(torch::allclose(ours->forward(x), theirs->forward(x), 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(ours->named_buffers()["0.running_mean"], theirs->running_mean));
  EXPECT_TRUE(torch::allclose(ours->named_buffers()["0.running_var"], theirs->running_var));
  ours->eval();
  theirs->eval();
  EXPECT_TRUE(torch::allclose(ours->forward(x), theirs->forward(x), 1e-5, 1e-6));
}

TEST(Layers, EmbeddingAndLayerNorm) {
  TL::Sequential net({TL::Embedding(50, 8), TL::LayerNorm({8}), TL::Dense(8, 3, "softmax")});
  const torch::Tensor y = net->forward(torch::randint(0, 50, {2, 5}));
  EXPECT_EQ(y.sizes(), (std::vector<std::int64_t>{2, 5, 3}));
}

TEST(Layers, ConfigRoundTripRebuildsTheSameArchitecture) {
  TL::Sequential net = lenet();
  const json config = net->get_config();
  EXPECT_EQ(config["class_name"], "Sequential");
  EXPECT_EQ(config["config"]["layers"].size(), 10u);
  EXPECT_EQ(config["config"]["layers"][0]["class_name"], "Conv2D");
  EXPECT_EQ(config["config"]["layers"][0]["config"]["padding"], "same");
  auto rebuilt = TL::SequentialImpl::from_config(json::parse(net->config_json()));
  EXPECT_EQ(rebuilt->get_config(), config);
  EXPECT_EQ(rebuilt->named_parameters().size(), net->named_parameters().size());
  EXPECT_EQ(rebuilt->forward(torch::randn({2, 1, 28, 28})).sizes(),
            (std::vector<std::int64_t>{2, 10}));
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const tnt::Error& e) {
    return e.what();
  }
  return "";
}

TEST(Layers, BadArgumentsAndConfigsNameTheLayerAndTheValue) {
  EXPECT_NE(error_of([] { TL::Dense(4, 0); }).find("units > 0, got 0"), std::string::npos);
  const std::string act = error_of([] { TL::Dense(4, 2, "relux"); });
  EXPECT_NE(act.find("unknown activation 'relux'"), std::string::npos) << act;
  EXPECT_NE(act.find("relu"), std::string::npos) << act;
  EXPECT_NE(error_of([] { TL::Conv2D(1, 2, 3, 1, "full"); }).find("\"full\""), std::string::npos);
  EXPECT_NE(error_of([] { TL::Dropout(1.0); }).find("rate < 1, got 1"), std::string::npos);
  const std::string shape = error_of([] { TL::Sequential({TL::Dense(4, 2)})->forward(torch::randn({1, 5})); });
  EXPECT_NE(shape.find("last dimension must be 4"), std::string::npos) << shape;

  const std::string missing =
      error_of([] { TL::layer_from_config(json{{"class_name", "Dense"}, {"config", {{"units", 3}}}}); });
  EXPECT_NE(missing.find("Dense"), std::string::npos) << missing;
  EXPECT_NE(missing.find("\"in_features\""), std::string::npos) << missing;
  const std::string wrong_type = error_of([] {
    TL::layer_from_config(
        json{{"class_name", "Dense"}, {"config", {{"in_features", "four"}, {"units", 3}}}});
  });
  EXPECT_NE(wrong_type.find("wrong type"), std::string::npos) << wrong_type;
  const std::string unknown = error_of([] { TL::layer_from_config(json{{"class_name", "Conv3D"}}); });
  EXPECT_NE(unknown.find("unknown layer class 'Conv3D'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("register_layer"), std::string::npos) << unknown;
}

class ScaleImpl : public TL::LayerImpl {
 public:
  explicit ScaleImpl(double factor) : TL::LayerImpl("Scale"), factor_(factor) {}
  torch::Tensor forward(const torch::Tensor& x) override { return x * factor_; }
  json get_config() const override { return {{"factor", factor_}}; }

 private:
  double factor_;
};

TEST(Layers, UserLayersRoundTripOnceRegistered) {
  TL::Sequential net({TL::Dense(2, 2), std::make_shared<ScaleImpl>(3.0)});
  const json config = net->get_config();
  EXPECT_NE(error_of([&] { TL::SequentialImpl::from_config(config); }).find("'Scale'"),
            std::string::npos);
  TL::register_layer("Scale", [](const json& c) {
    return std::make_shared<ScaleImpl>(c.at("factor").get<double>());
  });
  auto rebuilt = TL::SequentialImpl::from_config(config);
  EXPECT_EQ(rebuilt->get_config(), config);
  const auto names = TL::registered_layers();
  EXPECT_NE(std::find(names.begin(), names.end(), "Scale"), names.end());
}

TEST(CompileDescriptions, BuiltInsDescribeThemselvesCustomPartsDoNot) {
  EXPECT_EQ(json::parse(tnt::optimizers::SGD(0.1, 0.9, true).config),
            json::parse(R"({"class_name":"SGD","config":{"learning_rate":0.1,"momentum":0.9,
                            "nesterov":true,"weight_decay":0.0}})"));
  EXPECT_EQ(json::parse(tnt::losses::Huber(tnt::losses::LossOptions().delta(2)).config)["config"]["delta"], 2.0);
  EXPECT_EQ(json::parse(tnt::metrics::TopKCategoricalAccuracy(3).config)["config"]["k"], 3);
  const auto warm = tnt::schedules::WarmUp(tnt::schedules::PiecewiseConstantDecay({10}, {1.0, 0.1}), 5);
  EXPECT_EQ(json::parse(warm.config)["config"]["schedule"]["class_name"], "PiecewiseConstantDecay");
  EXPECT_EQ(warm(20), 0.1);
  // A lambda converts to a schedule / optimizer factory, without a description.
  tnt::schedules::Schedule user = [](std::int64_t step) { return 1.0 / (1 + step); };
  EXPECT_TRUE(user.config.empty());
  EXPECT_EQ(user(1), 0.5);
  EXPECT_TRUE(tnt::schedules::WarmUp(user, 5).config.empty());
  EXPECT_TRUE(tnt::losses::Loss("l1", [](const torch::Tensor& p, const torch::Tensor& t) {
                return (p - t).abs().mean();
              }).config.empty());
}

}  // namespace

namespace {

TEST(SetSeed, SeedsGeneratorsAndTheDefaultShuffle) {
  auto order = [] {
    std::vector<std::int64_t> out;
    auto it = tnt::data::Dataset::range(0, 20).shuffle(20).iterate(0);
    while (auto e = it.next()) out.push_back((*e)[0].item<std::int64_t>());
    return out;
  };
  tnt::set_seed(5);
  const torch::Tensor a = torch::randn({4});
  const auto order_a = order();
  EXPECT_EQ(tnt::data::default_shuffle_seed(), 5u);
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
  tnt::set_seed(5);
  EXPECT_TRUE(torch::equal(torch::randn({4}), a));
  EXPECT_EQ(order(), order_a);
  tnt::set_seed(6);
  EXPECT_FALSE(torch::equal(torch::randn({4}), a));
  EXPECT_NE(order(), order_a);
  tnt::set_seed(7, /*deterministic=*/false);
  EXPECT_TRUE(tnt::seed_was_set());
  at::globalContext().setDeterministicAlgorithms(false, false);
  tnt::data::set_default_shuffle_seed(tnt::data::kDefaultShuffleSeed);
}

}  // namespace
