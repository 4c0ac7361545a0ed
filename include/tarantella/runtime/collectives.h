// Collectives over the world group, as free functions: shorthands for
// tnt::world().allreduce(...) and friends (see comm/process_group.h for the
// semantics and the consistency check every call runs). Library code below
// the public API never calls these: it is given the group it works on.
#pragma once

#include <tarantella/comm/process_group.h>

namespace tnt::comm {

// ---- asynchronous: return at once; the Handle's wait() gives the result ----

Handle allreduce_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
Handle broadcast_async(torch::Tensor tensor, int root = 0);
Handle allgather_async(torch::Tensor tensor);
Handle allgatherv_async(torch::Tensor tensor);
Handle reduce_scatter_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
Handle barrier_async();

// ---- synchronous: enqueue and wait ----

torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
torch::Tensor broadcast(torch::Tensor tensor, int root = 0);
torch::Tensor allgather(torch::Tensor tensor);
torch::Tensor allgatherv(torch::Tensor tensor);
torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
void barrier();

}  // namespace tnt::comm
