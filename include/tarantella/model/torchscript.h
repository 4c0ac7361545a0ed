// TorchScript models: a network defined in Python PyTorch and saved with
// torch.jit.script(net).save("net.pt") trains in C++ without rewriting.
//
// Example:
//   #include <torch/script.h>
//   #include <tarantella/model/torchscript.h>
//   tnt::Model model = tnt::load_torchscript("net.pt");
//   // or: tnt::Model model{torch::jit::load("net.pt", torch::kCPU)};
//   // (without torch::kCPU, a file saved from a GPU loads onto cuda:0 on
//   // every rank first: a CUDA context and cached memory there per rank)
#pragma once

#include <memory>
#include <string>

#include <tarantella/model/model.h>

namespace tnt {

/// Loads a TorchScript file (errors name the file) and wraps it.
Model load_torchscript(const std::string& path);

}  // namespace tnt
