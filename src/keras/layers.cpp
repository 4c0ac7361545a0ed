#include <tarantella/keras/layers.h>

#include <algorithm>
#include <cmath>
#include <map>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include <tarantella/base/error.h>
#include <tarantella/keras/sync_batchnorm.h>

#include "keras/registry.h"

namespace tnt::layers {
namespace {

using json = nlohmann::json;

// ---- activations ----------------------------------------------------------

using ActivationFn = torch::Tensor (*)(const torch::Tensor&);

const std::map<std::string, ActivationFn>& activations() {
  static const std::map<std::string, ActivationFn> table = {
      {"linear", [](const torch::Tensor& x) { return x; }},
      {"relu", [](const torch::Tensor& x) { return torch::relu(x); }},
      {"sigmoid", [](const torch::Tensor& x) { return torch::sigmoid(x); }},
      {"tanh", [](const torch::Tensor& x) { return torch::tanh(x); }},
      {"softmax", [](const torch::Tensor& x) { return torch::softmax(x, -1); }},
      {"log_softmax", [](const torch::Tensor& x) { return torch::log_softmax(x, -1); }},
      {"gelu", [](const torch::Tensor& x) { return torch::gelu(x); }},
      {"elu", [](const torch::Tensor& x) { return torch::elu(x); }},
      {"selu", [](const torch::Tensor& x) { return torch::selu(x); }},
      {"leaky_relu", [](const torch::Tensor& x) { return torch::leaky_relu(x, 0.3); }},
      {"softplus", [](const torch::Tensor& x) { return torch::softplus(x); }},
      {"silu", [](const torch::Tensor& x) { return torch::silu(x); }},
      {"swish", [](const torch::Tensor& x) { return torch::silu(x); }},
  };
  return table;
}

ActivationFn activation_or_throw(const std::string& layer, const std::string& name) {
  const auto it = activations().find(name);
  if (it == activations().end()) {
    std::string known;
    for (const auto& [n, f] : activations()) known += (known.empty() ? "" : ", ") + n;
    throw Error(detail::concat(layer, ": unknown activation '", name, "'; use one of: ", known));
  }
  return it->second;
}

void check_positive(const char* layer, const char* field, std::int64_t value) {
  TNT_CHECK(value > 0, layer, " needs ", field, " > 0, got ", value);
}

// PyTorch's default initialization of Linear / Conv2d (kaiming uniform with
// a = sqrt(5), bias uniform in +-1/sqrt(fan_in)), so networks built here
// start like their PyTorch twins.
void init_like_pytorch(torch::Tensor& weight, torch::Tensor& bias, std::int64_t fan_in) {
  torch::NoGradGuard no_grad;
  torch::nn::init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    const double bound = fan_in > 0 ? 1.0 / std::sqrt(static_cast<double>(fan_in)) : 0.0;
    bias.uniform_(-bound, bound);
  }
}

// ---- the layers -------------------------------------------------------------

class DenseLayer : public LayerImpl {
 public:
  DenseLayer(std::int64_t in, std::int64_t units, std::string activation, bool use_bias)
      : LayerImpl("Dense"), in_(in), units_(units), activation_name_(std::move(activation)) {
    check_positive("Dense", "in_features", in);
    check_positive("Dense", "units", units);
    activation_ = activation_or_throw("Dense", activation_name_);
    weight_ = register_parameter("weight", torch::empty({units, in}));
    if (use_bias) bias_ = register_parameter("bias", torch::empty({units}));
    init_like_pytorch(weight_, bias_, in);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(x.dim() >= 1 && x.size(-1) == in_, "Dense(in_features=", in_, ") got an input of shape ",
              x.sizes(), ": its last dimension must be ", in_);
    return activation_(torch::linear(x, weight_, bias_));
  }
  json get_config() const override {
    return {{"in_features", in_}, {"units", units_}, {"activation", activation_name_},
            {"use_bias", bias_.defined()}};
  }

 private:
  std::int64_t in_, units_;
  std::string activation_name_;
  ActivationFn activation_;
  torch::Tensor weight_, bias_;
};

class Conv2DLayer : public LayerImpl {
 public:
  Conv2DLayer(std::int64_t in, std::int64_t filters, std::int64_t kernel, std::int64_t strides,
              std::string padding, std::string activation, bool use_bias)
      : LayerImpl("Conv2D"),
        in_(in),
        filters_(filters),
        kernel_(kernel),
        strides_(strides),
        padding_(std::move(padding)),
        activation_name_(std::move(activation)) {
    check_positive("Conv2D", "in_channels", in);
    check_positive("Conv2D", "filters", filters);
    check_positive("Conv2D", "kernel_size", kernel);
    check_positive("Conv2D", "strides", strides);
    TNT_CHECK(padding_ == "valid" || padding_ == "same", "Conv2D: padding must be \"valid\" or "
              "\"same\", got \"", padding_, "\"");
    activation_ = activation_or_throw("Conv2D", activation_name_);
    weight_ = register_parameter("weight", torch::empty({filters, in, kernel, kernel}));
    if (use_bias) bias_ = register_parameter("bias", torch::empty({filters}));
    init_like_pytorch(weight_, bias_, in * kernel * kernel);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(x.dim() == 4 && x.size(1) == in_, "Conv2D(in_channels=", in_,
              ") needs inputs [batch, ", in_, ", height, width], got ", x.sizes());
    torch::Tensor input = x;
    if (padding_ == "same") {
      // Keras's "same": output = ceil(input / strides); extra padding on the
      // bottom/right when the total is odd.
      std::vector<std::int64_t> pad;  // F.pad order: left, right, top, bottom
      for (int dim : {3, 2}) {
        const std::int64_t size = x.size(dim);
        const std::int64_t out = (size + strides_ - 1) / strides_;
        const std::int64_t total = std::max<std::int64_t>((out - 1) * strides_ + kernel_ - size, 0);
        pad.push_back(total / 2);
        pad.push_back(total - total / 2);
      }
      input = torch::constant_pad_nd(x, pad, 0);
    }
    return activation_(torch::conv2d(input, weight_, bias_, {strides_, strides_}));
  }
  json get_config() const override {
    return {{"in_channels", in_},      {"filters", filters_},
            {"kernel_size", kernel_},  {"strides", strides_},
            {"padding", padding_},     {"activation", activation_name_},
            {"use_bias", bias_.defined()}};
  }

 private:
  std::int64_t in_, filters_, kernel_, strides_;
  std::string padding_, activation_name_;
  ActivationFn activation_;
  torch::Tensor weight_, bias_;
};

class Pool2DLayer : public LayerImpl {
 public:
  Pool2DLayer(bool max, std::int64_t pool, std::int64_t strides)
      : LayerImpl(max ? "MaxPool2D" : "AvgPool2D"), max_(max), pool_(pool), strides_(strides) {
    check_positive(max ? "MaxPool2D" : "AvgPool2D", "pool_size", pool);
    TNT_CHECK(strides >= 0, name(), " needs strides >= 0 (0 = pool_size), got ", strides);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(x.dim() == 4, name(), " needs inputs [batch, channels, height, width], got ",
              x.sizes());
    const std::int64_t s = strides_ > 0 ? strides_ : pool_;
    return max_ ? torch::max_pool2d(x, {pool_, pool_}, {s, s})
                : torch::avg_pool2d(x, {pool_, pool_}, {s, s});
  }
  json get_config() const override { return {{"pool_size", pool_}, {"strides", strides_}}; }

 private:
  bool max_;
  std::int64_t pool_, strides_;
};

class FlattenLayer : public LayerImpl {
 public:
  FlattenLayer() : LayerImpl("Flatten") {}
  torch::Tensor forward(const torch::Tensor& x) override { return x.flatten(1); }
  json get_config() const override { return json::object(); }
};

class DropoutLayer : public LayerImpl {
 public:
  explicit DropoutLayer(double rate) : LayerImpl("Dropout"), rate_(rate) {
    TNT_CHECK(rate >= 0 && rate < 1, "Dropout needs 0 <= rate < 1, got ", rate);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::dropout(x, rate_, is_training());
  }
  json get_config() const override { return {{"rate", rate_}}; }

 private:
  double rate_;
};

// BatchNorm and SyncBatchNorm: the same arguments, parameters and buffers
// (PyTorch's names); they differ in whose statistics normalize.
class BatchNormLayer : public LayerImpl {
 public:
  BatchNormLayer(std::int64_t features, double momentum, double epsilon,
                 const char* class_name = "BatchNorm")
      : LayerImpl(class_name), features_(features), momentum_(momentum), epsilon_(epsilon) {
    check_positive(class_name, "num_features", features);
    TNT_CHECK(momentum >= 0 && momentum <= 1, class_name, " needs 0 <= momentum <= 1, got ",
              momentum);
    TNT_CHECK(epsilon > 0, class_name, " needs epsilon > 0, got ", epsilon);
    weight_ = register_parameter("weight", torch::ones({features}));
    bias_ = register_parameter("bias", torch::zeros({features}));
    running_mean_ = register_buffer("running_mean", torch::zeros({features}));
    running_var_ = register_buffer("running_var", torch::ones({features}));
    num_batches_ = register_buffer("num_batches_tracked", torch::zeros({}, torch::kLong));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    begin_batch(x);
    // PyTorch's momentum is the weight of the new batch: Keras's 1 - momentum.
    return torch::batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(),
                             1.0 - momentum_, epsilon_, /*cudnn_enabled=*/true);
  }
  json get_config() const override {
    return {{"num_features", features_}, {"momentum", momentum_}, {"epsilon", epsilon_}};
  }

 protected:
  void begin_batch(const torch::Tensor& x) {
    TNT_CHECK(x.dim() >= 2 && x.size(1) == features_, name(), "(num_features=", features_,
              ") needs inputs [batch, ", features_, ", ...], got ", x.sizes());
    if (is_training()) {
      torch::NoGradGuard no_grad;
      num_batches_.add_(1);
    }
  }

  std::int64_t features_;
  double momentum_, epsilon_;
  torch::Tensor weight_, bias_, running_mean_, running_var_, num_batches_;
};

class SyncBatchNormLayer : public BatchNormLayer, public nn::CollectiveModule {
 public:
  SyncBatchNormLayer(std::int64_t features, double momentum, double epsilon)
      : BatchNormLayer(features, momentum, epsilon, "SyncBatchNorm") {}
  torch::Tensor forward(const torch::Tensor& x) override {
    begin_batch(x);
    return nn::sync_batch_norm(x, weight_, bias_, running_mean_, running_var_, is_training(),
                               1.0 - momentum_, epsilon_, process_group());
  }
};

class LayerNormLayer : public LayerImpl {
 public:
  LayerNormLayer(std::vector<std::int64_t> shape, double epsilon)
      : LayerImpl("LayerNorm"), shape_(std::move(shape)), epsilon_(epsilon) {
    TNT_CHECK(!shape_.empty(), "LayerNorm needs a non-empty normalized_shape");
    for (auto d : shape_) check_positive("LayerNorm", "normalized_shape entries", d);
    TNT_CHECK(epsilon > 0, "LayerNorm needs epsilon > 0, got ", epsilon);
    weight_ = register_parameter("weight", torch::ones(shape_));
    bias_ = register_parameter("bias", torch::zeros(shape_));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return torch::layer_norm(x, shape_, weight_, bias_, epsilon_);
  }
  json get_config() const override {
    return {{"normalized_shape", shape_}, {"epsilon", epsilon_}};
  }

 private:
  std::vector<std::int64_t> shape_;
  double epsilon_;
  torch::Tensor weight_, bias_;
};

class EmbeddingLayer : public LayerImpl {
 public:
  EmbeddingLayer(std::int64_t input_dim, std::int64_t output_dim)
      : LayerImpl("Embedding"), input_dim_(input_dim), output_dim_(output_dim) {
    check_positive("Embedding", "input_dim", input_dim);
    check_positive("Embedding", "output_dim", output_dim);
    weight_ = register_parameter("weight", torch::randn({input_dim, output_dim}));
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    TNT_CHECK(!x.is_floating_point(), "Embedding needs integer indices, got a ", x.scalar_type(),
              " tensor");
    return torch::embedding(weight_, x.to(torch::kLong));
  }
  json get_config() const override {
    return {{"input_dim", input_dim_}, {"output_dim", output_dim_}};
  }

 private:
  std::int64_t input_dim_, output_dim_;
  torch::Tensor weight_;
};

class ActivationLayer : public LayerImpl {
 public:
  explicit ActivationLayer(std::string activation)
      : LayerImpl("Activation"),
        activation_name_(std::move(activation)),
        activation_(activation_or_throw("Activation", activation_name_)) {}
  torch::Tensor forward(const torch::Tensor& x) override { return activation_(x); }
  json get_config() const override { return {{"activation", activation_name_}}; }

 private:
  std::string activation_name_;
  ActivationFn activation_;
};

// ---- the registry -----------------------------------------------------------

// Reads a field of a layer config; missing or ill-typed fields name the
// layer and the field.
template <typename T>
T field(const std::string& layer, const json& config, const char* key) {
  return keras::field<T>("layer " + layer, config, key);
}
template <typename T>
T field_or(const std::string& layer, const json& config, const char* key, T fallback) {
  return config.contains(key) ? field<T>(layer, config, key) : fallback;
}

// The built-in layers' readers; register_layer adds the user's.
std::map<std::string, LayerFactory> builtin_readers() {
  using I = std::int64_t;
  std::map<std::string, LayerFactory> reg;
  reg["Dense"] = [](const json& c) {
    return Dense(field<I>("Dense", c, "in_features"), field<I>("Dense", c, "units"),
                 field_or<std::string>("Dense", c, "activation", "linear"),
                 field_or<bool>("Dense", c, "use_bias", true));
  };
  reg["Conv2D"] = [](const json& c) {
    return Conv2D(field<I>("Conv2D", c, "in_channels"), field<I>("Conv2D", c, "filters"),
                  field<I>("Conv2D", c, "kernel_size"), field_or<I>("Conv2D", c, "strides", 1),
                  field_or<std::string>("Conv2D", c, "padding", "valid"),
                  field_or<std::string>("Conv2D", c, "activation", "linear"),
                  field_or<bool>("Conv2D", c, "use_bias", true));
  };
  reg["MaxPool2D"] = [](const json& c) {
    return MaxPool2D(field_or<I>("MaxPool2D", c, "pool_size", 2),
                     field_or<I>("MaxPool2D", c, "strides", 0));
  };
  reg["AvgPool2D"] = [](const json& c) {
    return AvgPool2D(field_or<I>("AvgPool2D", c, "pool_size", 2),
                     field_or<I>("AvgPool2D", c, "strides", 0));
  };
  reg["Flatten"] = [](const json&) { return Flatten(); };
  reg["Dropout"] = [](const json& c) { return Dropout(field<double>("Dropout", c, "rate")); };
  reg["BatchNorm"] = [](const json& c) {
    return BatchNorm(field<I>("BatchNorm", c, "num_features"),
                     field_or<double>("BatchNorm", c, "momentum", 0.99),
                     field_or<double>("BatchNorm", c, "epsilon", 1e-3));
  };
  reg["SyncBatchNorm"] = [](const json& c) {
    return SyncBatchNorm(field<I>("SyncBatchNorm", c, "num_features"),
                         field_or<double>("SyncBatchNorm", c, "momentum", 0.99),
                         field_or<double>("SyncBatchNorm", c, "epsilon", 1e-3));
  };
  reg["LayerNorm"] = [](const json& c) {
    return LayerNorm(field<std::vector<I>>("LayerNorm", c, "normalized_shape"),
                     field_or<double>("LayerNorm", c, "epsilon", 1e-3));
  };
  reg["Embedding"] = [](const json& c) {
    return Embedding(field<I>("Embedding", c, "input_dim"), field<I>("Embedding", c, "output_dim"));
  };
  reg["Activation"] = [](const json& c) {
    return Activation(field<std::string>("Activation", c, "activation"));
  };
  return reg;
}

keras::Registry<Layer>& registry() {
  // Never destroyed: usable from static destructors.
  static auto* r = new keras::Registry<Layer>(
      "layer", "register it with tnt::layers::register_layer", builtin_readers());
  return *r;
}

}  // namespace

std::vector<std::string> activation_names() {
  std::vector<std::string> names;
  for (const auto& [name, f] : activations()) names.push_back(name);
  return names;
}

Layer Dense(std::int64_t in, std::int64_t units, std::string activation, bool use_bias) {
  return std::make_shared<DenseLayer>(in, units, std::move(activation), use_bias);
}
Layer Conv2D(std::int64_t in, std::int64_t filters, std::int64_t kernel, std::int64_t strides,
             std::string padding, std::string activation, bool use_bias) {
  return std::make_shared<Conv2DLayer>(in, filters, kernel, strides, std::move(padding),
                                       std::move(activation), use_bias);
}
Layer MaxPool2D(std::int64_t pool, std::int64_t strides) {
  return std::make_shared<Pool2DLayer>(true, pool, strides);
}
Layer AvgPool2D(std::int64_t pool, std::int64_t strides) {
  return std::make_shared<Pool2DLayer>(false, pool, strides);
}
Layer Flatten() { return std::make_shared<FlattenLayer>(); }
Layer Dropout(double rate) { return std::make_shared<DropoutLayer>(rate); }
Layer BatchNorm(std::int64_t features, double momentum, double epsilon) {
  return std::make_shared<BatchNormLayer>(features, momentum, epsilon);
}
Layer SyncBatchNorm(std::int64_t features, double momentum, double epsilon) {
  return std::make_shared<SyncBatchNormLayer>(features, momentum, epsilon);
}
Layer LayerNorm(std::vector<std::int64_t> shape, double epsilon) {
  return std::make_shared<LayerNormLayer>(std::move(shape), epsilon);
}
Layer Embedding(std::int64_t input_dim, std::int64_t output_dim) {
  return std::make_shared<EmbeddingLayer>(input_dim, output_dim);
}
Layer Activation(std::string name) { return std::make_shared<ActivationLayer>(std::move(name)); }

void register_layer(const std::string& class_name, LayerFactory factory) {
  registry().add(class_name, std::move(factory));
}

std::vector<std::string> registered_layers() { return registry().names(); }

Layer layer_from_config(const json& description) {
  Layer layer = registry().read(description);
  TNT_CHECK(layer != nullptr, "the factory of layer class ", description["class_name"].dump(),
            " returned no layer");
  return layer;
}

SequentialImpl::SequentialImpl(std::vector<Layer> layers, std::string name)
    : torch::nn::Module("Sequential"), sequential_name_(std::move(name)) {
  for (auto& layer : layers) add(std::move(layer));
}

void SequentialImpl::add(Layer layer) {
  TNT_CHECK(layer != nullptr, "Sequential::add got no layer (a null Layer)");
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

void SequentialImpl::replace(std::size_t index, Layer layer) {
  TNT_CHECK(index < layers_.size(), "Sequential::replace: no layer ", index,
            " (the Sequential has ", layers_.size(), ")");
  TNT_CHECK(layer != nullptr, "Sequential::replace got no layer (a null Layer)");
  replace_module(std::to_string(index), layer);
  layers_[index] = std::move(layer);
}

torch::Tensor SequentialImpl::forward(const torch::Tensor& x) {
  TNT_CHECK(!layers_.empty(), "Sequential '", sequential_name_, "' has no layers");
  torch::Tensor y = x;
  for (auto& layer : layers_) y = layer->forward(y);
  return y;
}

json SequentialImpl::get_config() const {
  json layers = json::array();
  for (const auto& layer : layers_) {
    layers.push_back({{"class_name", layer->class_name()}, {"config", layer->get_config()}});
  }
  return {{"class_name", "Sequential"},
          {"config", {{"name", sequential_name_}, {"layers", std::move(layers)}}}};
}

std::string SequentialImpl::config_json() const { return get_config().dump(); }

std::shared_ptr<SequentialImpl> SequentialImpl::from_config(const json& config) {
  TNT_CHECK(config.is_object() && config.value("class_name", "") == "Sequential" &&
                config.contains("config") && config["config"].is_object(),
            "not a Sequential architecture (expected {\"class_name\": \"Sequential\", \"config\": "
            "{\"layers\": [...]}}): ",
            config.dump().substr(0, 200));
  const json& body = config["config"];
  TNT_CHECK(body.contains("layers") && body["layers"].is_array(),
            "the Sequential config has no \"layers\" array: ", body.dump().substr(0, 200));
  auto net = std::make_shared<SequentialImpl>(std::vector<Layer>{},
                                              body.value("name", std::string("sequential")));
  std::size_t index = 0;
  for (const json& layer : body["layers"]) {
    try {
      net->add(layer_from_config(layer));
    } catch (const Error& e) {
      throw Error(detail::concat("layer ", index, " of the Sequential: ", e.what()));
    }
    ++index;
  }
  return net;
}

}  // namespace tnt::layers
