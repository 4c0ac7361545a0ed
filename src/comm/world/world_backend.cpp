#include "comm/world/world_backend.h"

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

BackendFacts local_facts(const Config& config, const Backend& world) {
  BackendFacts facts;
  facts.requested = config.comm_backend;
  facts.nccl_built = nccl_built();
  facts.local_ranks = world.local_size();
  facts.visible_gpus = torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count())
                                                   : 0;
  // The engine's device rule (train/engine/engine.cpp, pick_device).
  facts.model_on_cuda = config.use_gpu.value_or(true) && facts.visible_gpus > 0;
  return facts;
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
  const BackendFacts facts = local_facts(config, *voter);
  if (!nccl_built()) choose_backend(facts);  // NCCL forced but not built: the same error everywhere
  std::optional<BackendChoice> mine;
  std::optional<std::string> failure;
  try {
    mine = choose_backend(facts);
  } catch (const Error& e) {
    failure = e.what();
  }
  const std::vector<BackendVote> votes = gather_votes(
      *voter, failure ? BackendVote::Failed
                      : (mine->kind == BackendKind::Nccl ? BackendVote::Nccl : BackendVote::Mpi));
  if (failure) throw Error(*failure);
  const BackendChoice choice = settle_backend(votes, *mine);
  ::tnt::log::info(::tnt::detail::concat("collectives over ", to_string(choice.kind), ": ",
                                         choice.reason));
  if (choice.kind == BackendKind::Mpi) {
    voter.reset();
    return session.world(timeout);
  }
  const int device = voter->local_rank();
  return make_nccl_backend(std::move(voter), device);
}

}  // namespace tnt::comm
