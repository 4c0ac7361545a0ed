// Private: what the NCCL backend asks NCCL to do for a dtype and a reduce
// operation, in our own terms. Kept apart from <nccl.h> (nccl_backend.cpp
// turns these into ncclDataType_t / ncclRedOp_t one to one) so that the
// decisions are unit-tested in every build, also where NCCL is absent:
//
//  * bool travels as uint8 (NCCL has no bool): Min of 0/1 bytes is a logical
//    and, Max a logical or, as MpiBackend's MPI_LAND / MPI_LOR;
//  * Average is a Sum followed by a division by the group's size, as on
//    MPI, so both backends round the same way (ncclAvg would pre-scale);
//  * float64 stays float64: deterministic mode's exact sums are integers
//    held in float64 below 2^53, which any order of additions gives exactly.
#pragma once

#include <optional>

#include <tarantella/comm/reduce_op.h>

#include "comm/dtype.h"

namespace tnt::comm {

/// NCCL's element types that we use (named as in <nccl.h>).
enum class NcclType { Float32, Float64, Float16, BFloat16, Int32, Int64, Uint8 };
/// NCCL's reduction operations that we use.
enum class NcclOp { Sum, Prod, Min, Max };

struct NcclPlan {
  NcclType type = NcclType::Float32;
  NcclOp op = NcclOp::Sum;  ///< unused without a ReduceOp (broadcast, allgather)
  bool divide_by_size = false;  ///< Average: divide the sum afterwards
};

/// The plan for `dtype` (and `op`, where the collective reduces). Throws
/// tnt::Error where the combination makes no sense (check_supported).
NcclPlan nccl_plan(DType dtype, std::optional<ReduceOp> op);

/// "ncclFloat64", "ncclMax", ... for messages and tests.
const char* to_string(NcclType type);
const char* to_string(NcclOp op);

}  // namespace tnt::comm
