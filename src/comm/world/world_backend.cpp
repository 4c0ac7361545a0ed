#include "comm/world/world_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/types.h>

#include <tarantella/base/error.h>
#include <tarantella/base/logging.h>

#include "comm/world/backend_choice.h"
#include "comm/nccl/nccl_factory.h"

namespace tnt::comm {
namespace {

// This host as NCCL names it (NCCL_HOSTID, else the host name and the
// kernel's boot id, which containers on one machine share): two ranks
// with the same host and the same bus id have the same GPU.
std::string host_identity() {
  if (const char* id = std::getenv("NCCL_HOSTID"); id != nullptr && *id != '\0') return id;
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) name[0] = '\0';
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  return std::string(name) + "/" + boot;
}

BackendFacts local_facts(const Config& config, const Backend& world) {
  BackendFacts facts;
  facts.requested = config.comm_backend;
  facts.nccl_built = nccl_built();
  facts.nccl_version = nccl_version();
  // The engine's device rule.
  const auto gpu = rank_training_gpu(config.use_gpu.value_or(true), world.local_rank());
  facts.model_on_cuda = gpu.has_value();
  if (gpu) facts.gpu = gpu_bus_id(*gpu);
  return facts;
}

// Every rank's GPU key (gpu_key), through the world's checked allgather.
std::vector<std::int64_t> gather_gpu_keys(Backend& world, std::int64_t mine) {
  const torch::Tensor all = world.allgather(torch::tensor({mine}, torch::kInt64));
  return std::vector<std::int64_t>(all.data_ptr<std::int64_t>(),
                                   all.data_ptr<std::int64_t>() + all.numel());
}

// Every rank's vote, through the world's checked allgather: a rank whose
// choice failed still votes, so the others fail with it instead of waiting.
std::vector<BackendVote> gather_votes(Backend& world, BackendVote mine) {
  const torch::Tensor all =
      world.allgather(torch::tensor({static_cast<std::int32_t>(mine)}, torch::kInt32));
  std::vector<BackendVote> votes;
  for (std::int64_t r = 0; r < all.numel(); ++r) {
    votes.push_back(static_cast<BackendVote>(all.data_ptr<std::int32_t>()[r]));
  }
  return votes;
}

}  // namespace

std::unique_ptr<Backend> make_world_backend(const MpiSession& session, const Config& config) {
  const double timeout = config.comm_timeout_seconds;
  // Without NCCL in the build every rank decides alike (MPI), and with
  // TNT_COMM_BACKEND=mpi too: no vote, exactly the world as before.
  if (config.comm_backend == CommBackend::Mpi ||
      (!nccl_built() && config.comm_backend == CommBackend::Auto)) {
    // Said as for a vote, so a log always names the transport.
    ::tnt::log::info(::tnt::detail::concat(
        "collectives over mpi: ", config.comm_backend == CommBackend::Mpi
                                      ? "TNT_COMM_BACKEND=mpi"
                                      : "this build of Tarantella has no NCCL backend"));
    return session.world(timeout);
  }
  // The vote runs on a backend of its own, so that an MPI world numbers its
  // collectives from #0 as it always did (tests and messages rely on it).
  std::unique_ptr<Backend> voter = session.world(timeout);
  std::optional<BackendFacts> facts;
  std::optional<std::string> failure;
  try {
    facts = local_facts(config, *voter);
  } catch (const Error& e) {
    failure = e.what();  // told after the gathers, which every rank must join
  }
  // Which ranks share this rank's GPU: NCCL refuses them.
  const std::vector<std::int64_t> keys = gather_gpu_keys(
      *voter, facts ? gpu_key(host_identity(), facts->gpu) : 0);
  std::optional<BackendChoice> mine;
  if (facts) {
    facts->sharing_gpu = ranks_sharing_gpu(keys, voter->rank());
    if (!nccl_built()) choose_backend(*facts);  // NCCL forced but not built: the same error everywhere
    try {
      mine = choose_backend(*facts);
    } catch (const Error& e) {
      failure = e.what();
    }
  }
  const std::vector<BackendVote> votes = gather_votes(
      *voter, failure ? BackendVote::Failed
                      : (mine->kind == BackendKind::Nccl ? BackendVote::Nccl : BackendVote::Mpi));
  if (failure) throw Error(*failure);
  const BackendChoice choice = settle_backend(votes, *mine);
  ::tnt::log::info(::tnt::detail::concat("collectives over ", to_string(choice.kind), ": ",
                                         choice.reason));
  if (const std::string warning = sharing_warning(keys, config.ranks_per_gpu > 1);
      !warning.empty()) {
    ::tnt::log::warning(warning);
  }
  if (choice.kind == BackendKind::Mpi) {
    voter.reset();
    return session.world(timeout);
  }
  const int device =
      rank_gpu_index(voter->local_rank(), static_cast<int>(torch::cuda::device_count()));
  return make_nccl_backend(std::move(voter), device);
}

}  // namespace tnt::comm
