// Private: the dtypes collectives support, named independently of any
// backend (MPI's mapping is in mpi_types.h).
#pragma once

#include <cstdint>

#include <torch/types.h>

#include <tarantella/comm/reduce_op.h>

namespace tnt::comm {

enum class DType : std::int32_t { Float32, Float64, Float16, BFloat16, Int32, Int64, UInt8, Bool };

/// The DType of a tensor; throws tnt::Error naming an unsupported dtype.
DType dtype_of(const torch::Tensor& tensor);
const char* to_string(DType dtype);
bool is_floating(DType dtype);
/// Throws tnt::Error when `op` makes no sense on `dtype` (e.g. a sum of
/// bool, an average of integers).
void check_supported(DType dtype, ReduceOp op);

}  // namespace tnt::comm
