// Fashion-MNIST and the generic MNIST-format loader (datasets.h).
#include <tarantella/data/datasets.h>

#include <filesystem>
#include <system_error>

#include <torch/torch.h>

#include <tarantella/data/idx.h>
#include <tarantella/base/error.h>

namespace tnt::data::datasets {
namespace {

// <dir>/<name>.gz, else <dir>/<name>; an error naming both when neither exists.
std::string find_file(const std::string& dir, const std::string& name) {
  namespace fs = std::filesystem;
  for (const auto& candidate : {fs::path(dir) / (name + ".gz"), fs::path(dir) / name}) {
    std::error_code ec;  // a path that cannot be read counts as missing
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  TNT_CHECK(false, "Fashion-MNIST file ", name, "[.gz] not found in ", dir,
            ": install Debian's package with `apt-get install dataset-fashion-mnist` (files go to ",
            kFashionMnistDir, "), or pass the directory that holds the files");
  return {};
}

}  // namespace

Dataset mnist_format(const std::string& images_path, const std::string& labels_path) {
  const torch::Tensor images = read_idx(images_path);
  const torch::Tensor labels = read_idx(labels_path);
  TNT_CHECK(images.dim() == 3 && images.scalar_type() == torch::kUInt8, "MNIST images file ",
            images_path, " holds ", images.scalar_type(), " of shape ", images.sizes(),
            ": expected uint8 images of shape [N, rows, cols] (an idx3-ubyte file)");
  TNT_CHECK(labels.dim() == 1, "MNIST labels file ", labels_path, " has shape ", labels.sizes(),
            ": expected one label per image, shape [N] (an idx1-ubyte file)");
  TNT_CHECK(images.size(0) == labels.size(0), "MNIST files disagree: ", images_path, " has ",
            images.size(0), " images but ", labels_path, " has ", labels.size(0), " labels");
  return Dataset::from_tensor_slices(
      {images.unsqueeze(1).to(torch::kFloat32).div_(255.0), labels.to(torch::kInt64)});
}

Dataset fashion_mnist(const std::string& split, const std::string& dir) {
  TNT_CHECK(split == "train" || split == "test", "fashion_mnist: split '", split,
            "' is invalid: use \"train\" or \"test\"");
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels = find_file(dir, prefix + "-labels-idx1-ubyte");
  return mnist_format(images, labels);
}

}  // namespace tnt::data::datasets
