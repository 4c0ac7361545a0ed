#include <tarantella/dp/state_sync.h>

#include <map>
#include <sstream>
#include <string>
#include <utility>

#include <torch/torch.h>

#include <tarantella/base/error.h>

namespace tnt::dp {
namespace {

std::vector<std::string> describe_each(const NamedTensors& tensors) {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors) {
    std::ostringstream line;
    line << "'" << name << "' " << t.scalar_type() << " " << t.sizes();
    out.push_back(line.str());
  }
  return out;
}

std::string join(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

torch::Tensor bytes_of(const std::string& s) {
  return torch::from_blob(const_cast<char*>(s.data()), {static_cast<std::int64_t>(s.size())},
                          torch::kUInt8)
      .clone();
}

std::string first_difference(const std::vector<std::string>& master,
                             const std::vector<std::string>& other, int rank) {
  for (std::size_t i = 0; i < std::min(master.size(), other.size()); ++i) {
    if (master[i] != other[i]) {
      return detail::concat("tensor #", i, " is ", master[i], " on rank 0 but ", other[i],
                            " on rank ", rank);
    }
  }
  return detail::concat("rank 0 has ", master.size(), " tensors, rank ", rank, " has ",
                        other.size());
}

}  // namespace

void check_same_structure(const comm::ProcessGroup& group, const NamedTensors& tensors,
                          const std::string& what) {
  const std::vector<std::string> mine = describe_each(tensors);
  const std::string text = join(mine);
  // Everyone gathers everyone's description (once per fit; a few KiB), so
  // every rank can name the same first difference.
  const torch::Tensor lengths =
      group.allgather(torch::tensor({static_cast<std::int64_t>(text.size())}));
  const torch::Tensor all = group.allgatherv(bytes_of(text));
  const auto* base = static_cast<const char*>(all.data_ptr());
  std::vector<std::string> texts;
  std::int64_t offset = 0;
  for (int r = 0; r < lengths.numel(); ++r) {
    const std::int64_t n = lengths[r].item<std::int64_t>();
    texts.emplace_back(base + offset, base + offset + n);
    offset += n;
  }
  for (int r = 1; r < static_cast<int>(texts.size()); ++r) {
    if (texts[r] != texts[0]) {
      detail::throw_error(detail::concat(
          "the model's ", what, " differ between ranks: ",
          first_difference(split_lines(texts[0]), split_lines(texts[r]), r),
          ". Every rank must build the same model (same layers, same order, same sizes)"));
    }
  }
}

void broadcast_tensors(const comm::ProcessGroup& group, const std::vector<torch::Tensor>& tensors,
                       int root) {
  // At 1 rank there is nothing to send; with a GPU model this is called at
  // every epoch's end (BatchNorm's statistics), where a copy to the host per
  // buffer would make the host wait for the GPU each time.
  if (group.size() == 1) return;
  // One flat buffer per dtype (and device) keeps this to a handful of
  // collectives, and the copies on the tensors' device.
  std::map<std::pair<torch::ScalarType, std::string>, std::vector<torch::Tensor>> by_dtype;
  for (const auto& t : tensors) by_dtype[{t.scalar_type(), t.device().str()}].push_back(t);
  for (auto& [key, same] : by_dtype) {
    std::vector<torch::Tensor> flat;
    for (const auto& t : same) flat.push_back(t.detach().reshape({-1}));
    torch::Tensor buffer = torch::cat(flat);
    group.broadcast(buffer, root);
    std::int64_t offset = 0;
    torch::NoGradGuard no_grad;
    for (auto& t : same) {
      t.detach().copy_(buffer.narrow(0, offset, t.numel()).view(t.sizes()));
      offset += t.numel();
    }
  }
}

void broadcast_optimizer_state(const comm::ProcessGroup& group,
                               torch::optim::Optimizer& optimizer, int root) {
  std::string bytes;
  if (group.rank() == root) {
    torch::serialize::OutputArchive archive;
    optimizer.save(archive);
    std::ostringstream out;
    archive.save_to(out);
    bytes = out.str();
  }
  bytes = group.broadcast_string(bytes, root);
  if (group.rank() != root) {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    // Onto this rank's device: the root's tensors name the root's GPU.
    torch::Device device = torch::kCPU;
    for (const auto& g : optimizer.param_groups()) {
      if (!g.params().empty()) {
        device = g.params().front().device();
        break;
      }
    }
    archive.load_from(in, device);
    optimizer.load(archive);
  }
}

}  // namespace tnt::dp
