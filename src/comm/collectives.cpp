// The public collectives: each wraps a Communicator call into a request on
// the runtime's engine, so every MPI call happens on the engine thread.
#include <tarantella/comm/collectives.h>

#include <tarantella/runtime/error.h>

#include "comm/communicator.h"
#include "runtime/state.h"

namespace tnt::comm {
namespace {

template <typename Fn>
Handle submit(const char* caller, std::string name, Fn fn) {
  const detail::RuntimeView& rt = detail::require_runtime(caller);
  Communicator* comm = rt.communicator;
  return rt.engine->enqueue(std::move(name), [comm, fn] { return fn(*comm); });
}

std::string with_op(const char* name, ReduceOp op) {
  return std::string(name) + "(" + to_string(op) + ")";
}

}  // namespace

Handle allreduce_async(torch::Tensor tensor, ReduceOp op) {
  return submit("tnt::comm::allreduce", with_op("allreduce", op),
                [tensor, op](Communicator& c) { return c.allreduce(tensor, op); });
}

Handle broadcast_async(torch::Tensor tensor, int root) {
  return submit("tnt::comm::broadcast", "broadcast",
                [tensor, root](Communicator& c) { return c.broadcast(tensor, root); });
}

Handle allgather_async(torch::Tensor tensor) {
  return submit("tnt::comm::allgather", "allgather",
                [tensor](Communicator& c) { return c.allgather(tensor); });
}

Handle allgatherv_async(torch::Tensor tensor) {
  return submit("tnt::comm::allgatherv", "allgatherv",
                [tensor](Communicator& c) { return c.allgatherv(tensor); });
}

Handle reduce_scatter_async(torch::Tensor tensor, ReduceOp op) {
  return submit("tnt::comm::reduce_scatter", with_op("reduce_scatter", op),
                [tensor, op](Communicator& c) { return c.reduce_scatter(tensor, op); });
}

Handle barrier_async() {
  return submit("tnt::comm::barrier", "barrier", [](Communicator& c) {
    c.barrier();
    return torch::Tensor();
  });
}

torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op) {
  return allreduce_async(std::move(tensor), op).wait();
}
torch::Tensor broadcast(torch::Tensor tensor, int root) {
  return broadcast_async(std::move(tensor), root).wait();
}
torch::Tensor allgather(torch::Tensor tensor) { return allgather_async(std::move(tensor)).wait(); }
torch::Tensor allgatherv(torch::Tensor tensor) {
  return allgatherv_async(std::move(tensor)).wait();
}
torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op) {
  return reduce_scatter_async(std::move(tensor), op).wait();
}
void barrier() { barrier_async().wait(); }

}  // namespace tnt::comm
