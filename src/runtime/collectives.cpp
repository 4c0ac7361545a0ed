// The world-group shorthands of runtime/collectives.h.
#include <tarantella/runtime/collectives.h>

#include <tarantella/runtime/runtime.h>

namespace tnt::comm {

Handle allreduce_async(torch::Tensor t, ReduceOp op) { return world().allreduce_async(t, op); }
Handle broadcast_async(torch::Tensor t, int root) { return world().broadcast_async(t, root); }
Handle allgather_async(torch::Tensor t) { return world().allgather_async(t); }
Handle allgatherv_async(torch::Tensor t) { return world().allgatherv_async(t); }
Handle reduce_scatter_async(torch::Tensor t, ReduceOp op) {
  return world().reduce_scatter_async(t, op);
}
Handle barrier_async() { return world().barrier_async(); }

torch::Tensor allreduce(torch::Tensor t, ReduceOp op) { return world().allreduce(t, op); }
torch::Tensor broadcast(torch::Tensor t, int root) { return world().broadcast(t, root); }
torch::Tensor allgather(torch::Tensor t) { return world().allgather(t); }
torch::Tensor allgatherv(torch::Tensor t) { return world().allgatherv(t); }
torch::Tensor reduce_scatter(torch::Tensor t, ReduceOp op) {
  return world().reduce_scatter(t, op);
}
void barrier() { world().barrier(); }

}  // namespace tnt::comm
