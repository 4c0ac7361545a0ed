// Collective operations across all ranks on torch::Tensors, run on the
// runtime's communication engine. Every call is checked for consistency
// across ranks: when ranks call a collective with different operations,
// dtypes, element counts or roots, every rank gets a tnt::MismatchError that
// says what each rank had — never a hang or a wrong sum. When a rank does not
// arrive within TNT_COMM_TIMEOUT seconds, the others get a tnt::TimeoutError
// naming the missing ranks.
//
// Tensors must be contiguous. Supported dtypes: float32, float64, float16,
// bfloat16, int32, int64, uint8 and bool (bool: Min = logical and, Max =
// logical or). Tensors on a GPU are staged through host memory.
#pragma once

#include <string>

#include <tarantella/comm/comm_engine.h>

namespace tnt::comm {

enum class ReduceOp { Sum, Average, Min, Max, Product };

/// "sum", "average", ...
const char* to_string(ReduceOp op);

// ---- asynchronous: return at once; the Handle's wait() gives the result ----

/// In place: every rank's `tensor` becomes the reduction over ranks.
Handle allreduce_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
/// In place: every rank's `tensor` becomes the root's.
Handle broadcast_async(torch::Tensor tensor, int root = 0);
/// Result: the ranks' tensors (same shape everywhere) concatenated along
/// dimension 0 in rank order.
Handle allgather_async(torch::Tensor tensor);
/// Like allgather, but the size of dimension 0 may differ per rank.
Handle allgatherv_async(torch::Tensor tensor);
/// Reduces the ranks' tensors (same shape everywhere) and gives each rank its
/// slice of dimension 0: the first D mod N ranks get D/N + 1 rows, the others
/// D/N (the micro-batch rule), so the slices in rank order make up the whole.
Handle reduce_scatter_async(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
/// Completes when every rank has arrived.
Handle barrier_async();

// ---- synchronous: enqueue and wait ----

torch::Tensor allreduce(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
torch::Tensor broadcast(torch::Tensor tensor, int root = 0);
torch::Tensor allgather(torch::Tensor tensor);
torch::Tensor allgatherv(torch::Tensor tensor);
torch::Tensor reduce_scatter(torch::Tensor tensor, ReduceOp op = ReduceOp::Sum);
void barrier();

}  // namespace tnt::comm
