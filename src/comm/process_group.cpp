// ProcessGroup: every collective becomes a request on the group's own
// engine, which calls the backend one request at a time (async requests on
// its thread, a blocking one on the caller's when it is idle). split()
// first agrees on every rank's (color, key) through a checked allgather, so
// a rank that calls split while another calls something else gets the usual
// mismatch error, and every rank can compute the new group's world ranks
// itself. Point-to-point transfers skip the engine: the backend posts them
// at once and the Handle's waiter drives them (p2p_handle). An error of a
// group's backend names ranks by their number in that group: on the way
// out it is retold in the job's numbers (retold(), below).
#include <tarantella/comm/process_group.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>

#include <tarantella/base/error.h>

#include "base/waiting_on.h"
#include "comm/descriptor.h"
#include "comm/rank_naming.h"
#include "comm/ready_mark.h"

namespace tnt::comm {

// What an error of the group needs to name its ranks in the job's
// numbers: shared with the work in flight, which may outlive a handle.
struct RankNaming {
  std::vector<int> world_ranks;
  int group_rank = -1;
  int world_rank = -1;
  std::mutex mutex;
  std::vector<std::string> roles;  // name_ranks(); empty: none given
};

struct ProcessGroup::State {
  // Members: the backend and its engine. Non-members: neither.
  std::unique_ptr<Backend> backend;
  std::shared_ptr<RankNaming> naming = std::make_shared<RankNaming>();
  std::vector<int> world_ranks;
  int my_world_rank = -1;
  int world_local_rank = -1;  // inherited by every group split from this one
  std::string backend_name;
  std::string origin;  // for a non-member: how it came to be one
  // After backend, so destroyed before it: ends the registration of this
  // group's retelling with its backend (comm/rank_naming.h).
  std::shared_ptr<void> retelling;
  // Declared last: destroyed first, so queued requests still find the backend.
  std::unique_ptr<CommEngine> engine;
};

namespace {

std::vector<int> identity(int n) {
  std::vector<int> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::string join(const std::vector<int>& v) {
  std::ostringstream out;
  for (std::size_t i = 0; i < v.size(); ++i) out << (i ? "," : "") << v[i];
  return out.str();
}

std::string with_op(const char* name, ReduceOp op) {
  return std::string(name) + "(" + to_string(op) + ")";
}

// Note: a backend numbers ranks as its group does ("[tarantella rank 0]
// recv ... from rank 1"). On a group split from the world (a pipeline's
// stages, a stage's replicas, a process set) those are not the ranks the
// launcher and the logs name, so an error on its way out of the group is
// retold: its "[tarantella rank R] " prefix names this process's world
// rank, and a sentence says which world rank each group rank is, with its
// role when the group's owner gave roles (name_ranks: "stage 1 of 2,
// pipeline 1"). The world group without roles is left as it is. The
// exception keeps its type (TimeoutError, MismatchError, Error).
constexpr std::size_t kNamedRanks = 16;  // a longer list is cut

bool needs_retelling(const RankNaming& n) {
  if (n.world_rank != n.group_rank) return true;
  for (std::size_t r = 0; r < n.world_ranks.size(); ++r) {
    if (n.world_ranks[r] != static_cast<int>(r)) return true;
  }
  return false;
}

std::string retold_text(RankNaming& n, const std::string& text) {
  std::lock_guard<std::mutex> lock(n.mutex);
  if (!needs_retelling(n) && n.roles.empty()) return text;
  std::string out = text;
  const std::string mine = "[tarantella rank " + std::to_string(n.group_rank) + "] ";
  if (n.world_rank != n.group_rank && out.compare(0, mine.size(), mine) == 0) {
    out = "[tarantella rank " + std::to_string(n.world_rank) + "] " + out.substr(mine.size());
  }
  std::ostringstream names;
  const std::size_t shown = std::min(n.world_ranks.size(), kNamedRanks);
  for (std::size_t r = 0; r < shown; ++r) {
    names << (r ? ", " : "") << "its rank " << r << " is rank " << n.world_ranks[r];
    if (r < n.roles.size() && !n.roles[r].empty()) names << " (" << n.roles[r] << ")";
  }
  if (shown < n.world_ranks.size()) names << ", ...";
  while (!out.empty() && (out.back() == '.' || out.back() == ' ')) out.pop_back();
  return out + ". Ranks above are numbered within a group of " +
         std::to_string(n.world_ranks.size()) + ": " + names.str();
}

// The error `e` of a group with naming `n`, retold (see the note above).
std::exception_ptr retold(const std::shared_ptr<RankNaming>& n, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const TimeoutError& x) {
    return std::make_exception_ptr(TimeoutError(retold_text(*n, x.what())));
  } catch (const MismatchError& x) {
    return std::make_exception_ptr(MismatchError(retold_text(*n, x.what())));
  } catch (const Error& x) {
    return std::make_exception_ptr(Error(retold_text(*n, x.what())));
  } catch (...) {
    return e;
  }
}

// Calls `fn`; an error it throws leaves retold.
template <typename Fn>
auto told_in_job_ranks(const std::shared_ptr<RankNaming>& n, const Fn& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const Error&) {
    std::rethrow_exception(retold(n, std::current_exception()));
  }
}

// "allreduce(sum) with rank 1 (stage 1 of 2, pipeline 0), rank 3 (...)":
// what a collective in progress waits for, in the job's numbers
// (base/waiting_on.h).
std::string collective_waited_on(RankNaming& n, const std::string& name) {
  std::lock_guard<std::mutex> lock(n.mutex);
  std::string out = name + " with";
  const std::size_t shown = std::min(n.world_ranks.size(), kNamedRanks);
  for (std::size_t r = 0; r < shown; ++r) {
    out += (r ? ", rank " : " rank ") + std::to_string(n.world_ranks[r]);
    if (r < n.roles.size() && !n.roles[r].empty()) out += " (" + n.roles[r] + ")";
  }
  if (shown < n.world_ranks.size()) out += ", ...";
  return out;
}

}  // namespace

ProcessGroup::ProcessGroup(std::unique_ptr<Backend> backend, std::vector<int> world_ranks) {
  TNT_CHECK(backend != nullptr, "ProcessGroup needs a backend, got a null pointer");
  auto state = std::make_shared<State>();
  const int n = backend->size();
  if (world_ranks.empty()) world_ranks = identity(n);
  TNT_CHECK(static_cast<int>(world_ranks.size()) == n, "ProcessGroup: ", world_ranks.size(),
            " world ranks given for a backend of ", n, " ranks");
  state->my_world_rank = world_ranks[static_cast<std::size_t>(backend->rank())];
  state->naming->world_ranks = world_ranks;
  state->naming->group_rank = backend->rank();
  state->naming->world_rank = state->my_world_rank;
  state->world_ranks = std::move(world_ranks);
  state->world_local_rank = backend->local_rank();
  state->backend_name = backend->name();
  state->backend = std::move(backend);
  // What the backend reports without throwing (the MPI payload watchdog) is
  // told as this group's thrown errors are: in the job's ranks, with the
  // roles name_ranks() gives (comm/rank_naming.h).
  const Backend* registered = state->backend.get();
  set_retelling(registered, [naming = state->naming](const std::string& text) {
    return retold_text(*naming, text);
  });
  state->retelling =
      std::shared_ptr<void>(nullptr, [registered](void*) { set_retelling(registered, nullptr); });
  state->engine = std::make_unique<CommEngine>();
  state_ = std::move(state);
}

bool ProcessGroup::is_member() const { return state_ && state_->backend; }
int ProcessGroup::rank() const { return is_member() ? state_->backend->rank() : -1; }
int ProcessGroup::size() const {
  return state_ ? static_cast<int>(state_->world_ranks.size()) : 0;
}
int ProcessGroup::local_rank() const { return is_member() ? state_->backend->local_rank() : -1; }
int ProcessGroup::local_size() const { return is_member() ? state_->backend->local_size() : 0; }
int ProcessGroup::world_local_rank() const { return state_ ? state_->world_local_rank : -1; }
bool ProcessGroup::broken() const { return is_member() && state_->backend->broken(); }

const std::vector<int>& ProcessGroup::world_ranks() const {
  static const std::vector<int> none;
  return state_ ? state_->world_ranks : none;
}

void ProcessGroup::name_ranks(std::vector<std::string> roles) const {
  State& s = member("name_ranks");
  TNT_CHECK(static_cast<int>(roles.size()) == size(), "name_ranks(): ", roles.size(),
            " roles given for a ", describe(), ": give one per rank");
  std::lock_guard<std::mutex> lock(s.naming->mutex);
  s.naming->roles = std::move(roles);
}

std::string ProcessGroup::describe() const {
  if (!state_) return "an empty process group handle";
  std::ostringstream out;
  out << "group of " << size() << (size() == 1 ? " rank" : " ranks") << " (world ranks "
      << join(state_->world_ranks) << ") over " << state_->backend_name;
  return out.str();
}

ProcessGroup::State& ProcessGroup::member(const char* caller) const {
  TNT_CHECK(state_ != nullptr, caller,
            " on an empty ProcessGroup handle: use tnt::world() or a group made by split() or "
            "subgroup()");
  TNT_CHECK(state_->backend != nullptr, "world rank ", state_->my_world_rank, " called ", caller,
            " on a process group it is not a member of (", describe(), state_->origin,
            "): call a group's collectives only on its ranks (check group.is_member())");
  return *state_;
}

// The GPU a request's tensor is on (its ready mark's), which the engine
// thread adopts; none for host tensors.
static std::optional<c10::Device> device_of(const std::shared_ptr<ReadyMark>& mark) {
  if (!mark) return std::nullopt;
  return mark->stream.device();
}

// The engine's work for `fn` on `s`'s backend: under `mark` (the payload's
// ready moment on a GPU, comm/ready_mark.h), named in a stuck rank's report,
// its errors told in the job's ranks.
template <typename Fn>
static CommEngine::Work work_of(ProcessGroup::State& s, const std::string& name, Fn fn,
                                std::shared_ptr<ReadyMark> mark) {
  return [backend = s.backend.get(), fn, mark, naming = s.naming, name] {
    const ReadyMarkScope scope(mark.get());
    const ::tnt::detail::WaitingOn waiting([&] { return collective_waited_on(*naming, name); });
    return told_in_job_ranks(naming, [&] { return fn(*backend); });
  };
}

// `tensor`: the payload; on a GPU, the moment it is ready goes with the
// request, and the engine thread adopts its device.
template <typename Fn>
static Handle submit(ProcessGroup::State& s, std::string name, Fn fn,
                     const torch::Tensor& tensor = {}) {
  std::shared_ptr<ReadyMark> mark = ready_mark(tensor);
  const std::optional<c10::Device> device = device_of(mark);
  return s.engine->enqueue(name, work_of(s, name, fn, std::move(mark)), device);
}

// A blocking call: on the caller's thread when the engine is idle (see
// CommEngine::run), else on the engine thread after the requests queued
// before it, with `tensor`'s ready mark as submit() gives it.
template <typename Fn>
static torch::Tensor run_now(ProcessGroup::State& s, std::string name, Fn fn,
                             const torch::Tensor& tensor = {}) {
  std::shared_ptr<ReadyMark> mark = ready_mark(tensor);
  const std::optional<c10::Device> device = device_of(mark);
  return s.engine->run(name, work_of(s, name, fn, std::move(mark)), device);
}

// The work of each collective, shared by its blocking and async forms.
namespace {
auto allreduce_work(torch::Tensor t, ReduceOp op) {
  return [t, op](Backend& b) { return b.allreduce(t, op); };
}
auto broadcast_work(torch::Tensor t, int root) {
  return [t, root](Backend& b) { return b.broadcast(t, root); };
}
auto allgather_work(torch::Tensor t) {
  return [t](Backend& b) { return b.allgather(t); };
}
auto allgatherv_work(torch::Tensor t) {
  return [t](Backend& b) { return b.allgatherv(t); };
}
auto reduce_scatter_work(torch::Tensor t, ReduceOp op) {
  return [t, op](Backend& b) { return b.reduce_scatter(t, op); };
}
torch::Tensor barrier_work(Backend& b) {
  b.barrier();
  return torch::Tensor();
}
}  // namespace

Handle ProcessGroup::allreduce_async(torch::Tensor tensor, ReduceOp op) const {
  return submit(member("allreduce"), with_op("allreduce", op), allreduce_work(tensor, op), tensor);
}
Handle ProcessGroup::broadcast_async(torch::Tensor tensor, int root) const {
  return submit(member("broadcast"), "broadcast", broadcast_work(tensor, root), tensor);
}
Handle ProcessGroup::allgather_async(torch::Tensor tensor) const {
  return submit(member("allgather"), "allgather", allgather_work(tensor), tensor);
}
Handle ProcessGroup::allgatherv_async(torch::Tensor tensor) const {
  return submit(member("allgatherv"), "allgatherv", allgatherv_work(tensor), tensor);
}
Handle ProcessGroup::reduce_scatter_async(torch::Tensor tensor, ReduceOp op) const {
  return submit(member("reduce_scatter"), with_op("reduce_scatter", op),
                reduce_scatter_work(tensor, op), tensor);
}
Handle ProcessGroup::barrier_async() const {
  return submit(member("barrier"), "barrier", barrier_work);
}

torch::Tensor ProcessGroup::allreduce(torch::Tensor tensor, ReduceOp op) const {
  return run_now(member("allreduce"), with_op("allreduce", op), allreduce_work(tensor, op),
                 tensor);
}
torch::Tensor ProcessGroup::broadcast(torch::Tensor tensor, int root) const {
  return run_now(member("broadcast"), "broadcast", broadcast_work(tensor, root), tensor);
}
torch::Tensor ProcessGroup::allgather(torch::Tensor tensor) const {
  return run_now(member("allgather"), "allgather", allgather_work(tensor), tensor);
}
torch::Tensor ProcessGroup::allgatherv(torch::Tensor tensor) const {
  return run_now(member("allgatherv"), "allgatherv", allgatherv_work(tensor), tensor);
}
torch::Tensor ProcessGroup::reduce_scatter(torch::Tensor tensor, ReduceOp op) const {
  return run_now(member("reduce_scatter"), with_op("reduce_scatter", op),
                 reduce_scatter_work(tensor, op), tensor);
}
void ProcessGroup::barrier() const { run_now(member("barrier"), "barrier", barrier_work); }

namespace {

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             Handle::Clock::now().time_since_epoch())
      .count();
}

// A point-to-point transfer's Handle. Its result is set once, by the first
// thread that finds the transfer finished (wait(), or ready() when the
// transfer has finished); later callers get the same result or error.
// "recv from rank 1 (tag 2, '...') = rank 3 (stage 1 of 2, pipeline 1)":
// what a blocked transfer waits for, in the job's numbers (waiting_on.h).
std::string waited_on(RankNaming& n, const std::string& name, int peer) {
  std::lock_guard<std::mutex> lock(n.mutex);
  const auto p = static_cast<std::size_t>(peer);
  if (peer < 0 || p >= n.world_ranks.size()) return name;
  std::string out = name + " = rank " + std::to_string(n.world_ranks[p]);
  if (p < n.roles.size() && !n.roles[p].empty()) out += " (" + n.roles[p] + ")";
  return out;
}

Handle p2p_handle(std::shared_ptr<P2pWork> work, torch::Tensor tensor, std::string name,
                  std::shared_ptr<RankNaming> naming, int peer) {
  struct Completion {
    std::promise<torch::Tensor> promise;
    std::once_flag once;
  };
  auto completion = std::make_shared<Completion>();
  auto times = std::make_shared<Handle::Times>();
  times->started_ns = steady_ns();
  std::shared_future<torch::Tensor> result = completion->promise.get_future().share();
  Handle::Drive drive = [completion, work, tensor, times, naming, name, peer](bool block) {
    if (!block) {
      // ready() may be called from a thread of the library's own (a stage
      // link's sender): a failure found while testing is the transfer's
      // result, for its waiter to see, not an exception out of ready().
      std::exception_ptr failed;
      try {
        if (!work->test()) return;
      } catch (...) {
        failed = std::current_exception();
      }
      if (failed) {
        std::call_once(completion->once, [&] {
          completion->promise.set_exception(retold(naming, failed));
          times->finished_ns = steady_ns();
        });
        return;
      }
    }
    std::optional<::tnt::detail::WaitingOn> waiting;
    if (block) waiting.emplace([&] { return waited_on(*naming, name, peer); });
    std::call_once(completion->once, [&] {
      try {
        work->wait();
        completion->promise.set_value(tensor);
      } catch (...) {
        completion->promise.set_exception(retold(naming, std::current_exception()));
      }
      times->finished_ns = steady_ns();
    });
  };
  return Handle(std::move(result), std::move(name), std::move(times), std::move(drive));
}

std::string p2p_name(const char* call, const Transfer& t) {
  std::ostringstream out;
  out << call << (std::strcmp(call, "send") == 0 ? " to rank " : " from rank ") << t.peer
      << " (tag " << t.tag;
  if (!t.what.empty()) out << ", '" << t.what << "'";
  out << ")";
  return out.str();
}

}  // namespace

Handle ProcessGroup::isend(torch::Tensor tensor, int peer, int tag, std::string what) const {
  Transfer t{std::move(tensor), peer, tag, std::move(what)};
  State& s = member("send");
  std::shared_ptr<P2pWork> work =
      told_in_job_ranks(s.naming, [&] { return s.backend->send(t); });
  return p2p_handle(std::move(work), t.tensor, p2p_name("send", t), s.naming, peer);
}

Handle ProcessGroup::irecv(torch::Tensor tensor, int peer, int tag, std::string what) const {
  Transfer t{std::move(tensor), peer, tag, std::move(what)};
  State& s = member("recv");
  std::shared_ptr<P2pWork> work =
      told_in_job_ranks(s.naming, [&] { return s.backend->recv(t); });
  return p2p_handle(std::move(work), t.tensor, p2p_name("recv", t), s.naming, peer);
}

void ProcessGroup::send(torch::Tensor tensor, int peer, int tag, std::string what) const {
  isend(std::move(tensor), peer, tag, std::move(what)).wait();
}

torch::Tensor ProcessGroup::recv(torch::Tensor tensor, int peer, int tag, std::string what) const {
  return irecv(std::move(tensor), peer, tag, std::move(what)).wait();
}

void ProcessGroup::finalize_check() const {
  run_now(member("runtime shutdown"), "runtime shutdown", [](Backend& b) {
    b.finalize_check();
    return torch::Tensor();
  });
}

std::string ProcessGroup::broadcast_string(const std::string& text, int root) const {
  torch::Tensor size = torch::tensor({static_cast<std::int64_t>(text.size())});
  broadcast(size, root);
  torch::Tensor bytes = torch::empty({size.item<std::int64_t>()}, torch::kUInt8);
  if (bytes.numel() == 0) return {};
  if (rank() == root) std::memcpy(bytes.data_ptr(), text.data(), text.size());
  broadcast(bytes, root);
  return std::string(static_cast<const char*>(bytes.data_ptr()),
                     static_cast<std::size_t>(bytes.numel()));
}

ProcessGroup ProcessGroup::split(int color, int key) const {
  State& s = member("split");
  // Everyone's (color, key), checked like any collective.
  const torch::Tensor all =
      allgather(torch::tensor({static_cast<std::int64_t>(std::max(color, -1)),
                               static_cast<std::int64_t>(key)}));
  const auto* v = all.data_ptr<std::int64_t>();
  std::vector<int> members;  // this group's ranks with my color, by (key, rank)
  if (color >= 0) {
    for (int r = 0; r < size(); ++r) {
      if (v[2 * r] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(),
                     [v](int a, int b) { return v[2 * a + 1] < v[2 * b + 1]; });
  }
  auto out = std::make_shared<std::unique_ptr<Backend>>();
  run_now(s, "split", [out, color, key](Backend& b) {
    *out = b.split(color, key);
    return torch::Tensor();
  });
  std::vector<int> world;
  for (int r : members) world.push_back(s.world_ranks[static_cast<std::size_t>(r)]);
  if (color < 0) {
    auto state = std::make_shared<State>();
    state->my_world_rank = s.my_world_rank;
    state->world_local_rank = s.world_local_rank;
    state->backend_name = s.backend_name;
    state->origin = "; this rank passed a negative color to split()";
    return ProcessGroup(std::move(state));
  }
  TNT_CHECK(*out != nullptr && (*out)->size() == static_cast<int>(world.size()),
            "split(): the backend formed a group of ", *out ? (*out)->size() : 0,
            " ranks where ", world.size(), " were expected");
  ProcessGroup part(std::move(*out), std::move(world));
  // The device rule follows the world's local rank in every group (the
  // NCCL backend's split keeps its device the same way).
  part.state_->world_local_rank = s.world_local_rank;
  return part;
}

ProcessGroup ProcessGroup::subgroup(const std::vector<int>& ranks) const {
  member("subgroup");
  std::optional<std::string> problem;
  std::vector<char> seen(static_cast<std::size_t>(std::max(size(), 0)), 0);
  for (int r : ranks) {
    if (r < 0 || r >= size()) {
      problem = ::tnt::detail::concat("subgroup(): rank ", r, " is not a rank of this ", describe(),
                               ": pass ranks in 0..", size() - 1);
      break;
    }
    if (seen[static_cast<std::size_t>(r)]++) {
      problem = ::tnt::detail::concat("subgroup(): rank ", r, " is listed twice: list each rank once");
      break;
    }
  }
  if (!problem && ranks.empty()) problem = "subgroup(): the list of ranks is empty: pass at least one";
  // The same list on every rank: compare a fingerprint of it through the
  // checked allgather of split().
  std::uint64_t fingerprint = 1469598103934665603ULL;
  for (int r : ranks) fingerprint = (fingerprint ^ static_cast<std::uint64_t>(r + 1)) * 1099511628211ULL;
  const torch::Tensor mine = torch::tensor(
      {static_cast<std::int64_t>(fingerprint >> 1), static_cast<std::int64_t>(problem ? 1 : 0)});
  const torch::Tensor all = allgather(mine);
  for (int r = 0; r < size(); ++r) {
    if (all[2 * r + 1].item<std::int64_t>() != 0) {
      if (problem) ::tnt::detail::throw_error(*problem);
      ::tnt::detail::throw_error(::tnt::detail::concat("subgroup(): rank ", r,
                                         " rejected its list of ranks (see its error)"));
    }
    TNT_CHECK(all[2 * r].item<std::int64_t>() == all[0].item<std::int64_t>(),
              "subgroup(): rank ", r, " passed a different list of ranks than rank 0 (this rank: ",
              join(ranks), "): every rank of the group must pass the same list");
  }
  const auto it = std::find(ranks.begin(), ranks.end(), rank());
  const bool in = it != ranks.end();
  ProcessGroup group =
      split(in ? 0 : -1, in ? static_cast<int>(std::distance(ranks.begin(), it)) : 0);
  if (!in) {
    for (int r : ranks) group.state_->world_ranks.push_back(world_ranks()[static_cast<std::size_t>(r)]);
    group.state_->origin = "";
  }
  return group;
}

}  // namespace tnt::comm
