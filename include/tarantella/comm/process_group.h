// A process group: a cheap, copyable handle over one communicator (a
// Backend), the engine thread that runs its collectives in order, and the
// consistency check that precedes each of them. Everything that
// communicates is *given* the group it works on (c10d's Reducer takes a
// ProcessGroup, gloo's algorithms a Context): gradient synchronization,
// state broadcast, dataset distribution, the timeline, tnt::Model. The
// runtime owns the world group (tnt::world()); split() and subgroup() make
// process sets, each with its own engine, so two models can train side by
// side on disjoint ranks.
//
// Every collective is checked: when the group's ranks call different
// collectives (operation, dtype, element count, root), every rank gets a
// tnt::MismatchError saying what each had, never a hang or a wrong sum; a
// rank that does not arrive within TNT_COMM_TIMEOUT seconds gives the others
// a tnt::TimeoutError naming it. A rank outside a group that calls one of
// its collectives gets a tnt::Error at once.
//
// Tensors must be contiguous. Supported dtypes: float32, float64, float16,
// bfloat16, int32, int64, uint8 and bool (bool: Min = logical and, Max =
// logical or). Tensors on a GPU are staged through host memory.
//
// Point-to-point transfers (send/recv, isend/irecv, as in c10d) connect two
// ranks of a group, e.g. the stages of a pipeline. They do not go through
// the engine's queue, so they never wait behind queued collectives nor hold
// them up; they are checked too (dtype and shape against the receiver's
// buffer, the peer's arrival within TNT_COMM_TIMEOUT, both naming the
// transfer's label). docs/communication.md, "Point-to-point", has the rules.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <tarantella/comm/backend.h>
#include <tarantella/comm/comm_engine.h>
#include <tarantella/comm/reduce_op.h>

namespace tnt::comm {

/// A handle on a group of ranks. Copies share the group; the engine thread
/// stops when the last copy goes (after running what was queued).
///
/// Example:
///   tnt::comm::ProcessGroup world = tnt::world();
///   auto pair = world.subgroup({0, 1});          // collective over world
///   if (pair.is_member()) pair.allreduce(t);     // ranks 0 and 1 only
class ProcessGroup {
 public:
  /// An empty handle (valid() is false).
  ProcessGroup() = default;
  /// Wraps `backend` and starts the group's engine thread. `world_ranks`
  /// maps the group's ranks to world ranks (empty: the identity).
  explicit ProcessGroup(std::unique_ptr<Backend> backend, std::vector<int> world_ranks = {});

  /// Whether this handle refers to a group (member or not).
  bool valid() const { return state_ != nullptr; }
  /// Whether this rank belongs to the group. Collectives of a group this
  /// rank is not in throw a tnt::Error naming the group's ranks.
  bool is_member() const;
  /// This rank's number in the group, 0..size()-1 (-1 outside the group).
  int rank() const;
  /// The number of ranks in the group.
  int size() const;
  /// This rank's number among the group's ranks on its host, and their count.
  int local_rank() const;
  int local_size() const;
  /// This rank's number among the WORLD's ranks on its host, the same in
  /// every group split from the world: one GPU per world-local rank, so a
  /// model on a subgroup and that subgroup's NCCL communicator share it.
  int world_local_rank() const;
  /// The group's rank 0: it logs, prints progress and writes files.
  bool is_master() const { return rank() == 0; }
  /// World rank of each group rank, in group order.
  const std::vector<int>& world_ranks() const;
  /// "group of 2 ranks (world ranks 2,3) over mpi".
  std::string describe() const;
  /// Gives each rank of the group a role, for messages: an error of this
  /// group names its ranks by their world rank and role ("its rank 1 is
  /// rank 3 (stage 1 of 2, pipeline 1)"). Every copy of the handle sees
  /// them. Not collective; call it on each rank before the group is used.
  ///
  /// Example: stages.name_ranks({"stage 0 of 2, pipeline 1", "stage 1 of 2, pipeline 1"});
  void name_ranks(std::vector<std::string> roles) const;
  /// True after a timeout: the job must be aborted.
  bool broken() const;

  // ---- asynchronous: return at once; the Handle's wait() gives the result ----

  /// In place: every rank's `tensor` becomes the reduction over the group.
  Handle allreduce_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum) const;
  /// In place: every rank's `tensor` becomes the root's (a group rank).
  Handle broadcast_async(torch::Tensor tensor, int root = 0) const;
  /// Result: the ranks' tensors (same shape everywhere) concatenated along
  /// dimension 0 in rank order.
  Handle allgather_async(torch::Tensor tensor) const;
  /// Like allgather, but the size of dimension 0 may differ per rank.
  Handle allgatherv_async(torch::Tensor tensor) const;
  /// Reduces the ranks' tensors (same shape everywhere) and gives each rank
  /// its slice of dimension 0: the first D mod N ranks get D/N + 1 rows, the
  /// others D/N (the micro-batch rule).
  Handle reduce_scatter_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum) const;
  /// Completes when every rank has arrived.
  Handle barrier_async() const;

  // ---- synchronous: enqueue and wait ----

  torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum) const;
  torch::Tensor broadcast(torch::Tensor tensor, int root = 0) const;
  torch::Tensor allgather(torch::Tensor tensor) const;
  torch::Tensor allgatherv(torch::Tensor tensor) const;
  torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum) const;
  void barrier() const;
  /// `root`'s bytes on every rank (a size, then the bytes). Collective.
  std::string broadcast_string(const std::string& text, int root = 0) const;

  // ---- point-to-point: posted at once, outside the engine's queue ----

  /// Sends `tensor` to group rank `peer`. A send completes when the peer
  /// has received it (as with gloo and NCCL, MPI_Ssend in MPI's terms);
  /// leave `tensor` unchanged until then. Between one pair of ranks,
  /// transfers with the same `tag` (0 or more) are received in the order
  /// they were sent; different tags are independent streams. `what` names
  /// the transfer in every error ("stage 1 activations"). The receiver must
  /// pass a tensor of the same dtype and shape: otherwise both raise a
  /// tnt::MismatchError naming both ranks, both shapes and the label. A
  /// peer that does not take part within TNT_COMM_TIMEOUT seconds of
  /// waiting gives a tnt::TimeoutError naming it (the group is broken
  /// afterwards: the job must end). Bad arguments throw at once.
  ///
  /// Example (a two-stage pipeline):
  ///   if (g.rank() == 0) g.send(activations, 1, 0, "stage 0 activations");
  ///   else g.recv(buffer, 0, 0, "stage 0 activations");
  Handle isend(torch::Tensor tensor, int peer, int tag = 0, std::string what = "") const;
  /// Receives into `tensor` (preallocated, contiguous, the sender's dtype
  /// and shape) from group rank `peer`; wait() returns `tensor` filled. On
  /// an error its contents are undefined.
  Handle irecv(torch::Tensor tensor, int peer, int tag = 0, std::string what = "") const;
  /// isend(...).wait().
  void send(torch::Tensor tensor, int peer, int tag = 0, std::string what = "") const;
  /// irecv(...).wait(): returns `tensor`, filled.
  torch::Tensor recv(torch::Tensor tensor, int peer, int tag = 0, std::string what = "") const;

  // ---- process sets ----

  /// Collective over this group: the ranks passing the same non-negative
  /// `color` form a new group (its own engine), ordered by (key, rank); a
  /// rank passing a negative color gets a handle that is not a member.
  ProcessGroup split(int color, int key = 0) const;
  /// Collective over this group: a group of `ranks` (this group's numbers,
  /// in that order, no repeats); every rank of this group must call it with
  /// the same list. Ranks not listed get a non-member handle.
  ProcessGroup subgroup(const std::vector<int>& ranks) const;

  /// The shutdown handshake (the runtime's last collective): fails on every
  /// rank if another is still in a collective.
  void finalize_check() const;

  bool operator==(const ProcessGroup& other) const { return state_ == other.state_; }
  bool operator!=(const ProcessGroup& other) const { return state_ != other.state_; }

  struct State;

 private:
  explicit ProcessGroup(std::shared_ptr<State> state) : state_(std::move(state)) {}
  /// The state of a group this rank belongs to; throws otherwise.
  State& member(const char* caller) const;
  std::shared_ptr<State> state_;
};

}  // namespace tnt::comm
