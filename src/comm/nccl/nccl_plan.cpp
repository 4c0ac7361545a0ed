#include "comm/nccl/nccl_plan.h"

namespace tnt::comm {
namespace {

NcclType nccl_type(DType dtype) {
  switch (dtype) {
    case DType::Float32: return NcclType::Float32;
    case DType::Float64: return NcclType::Float64;
    case DType::Float16: return NcclType::Float16;
    case DType::BFloat16: return NcclType::BFloat16;
    case DType::Int32: return NcclType::Int32;
    case DType::Int64: return NcclType::Int64;
    case DType::UInt8:
    case DType::Bool: return NcclType::Uint8;
  }
  return NcclType::Uint8;
}

NcclOp nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return NcclOp::Sum;
    case ReduceOp::Product: return NcclOp::Prod;
    case ReduceOp::Min: return NcclOp::Min;
    case ReduceOp::Max: return NcclOp::Max;
  }
  return NcclOp::Sum;
}

}  // namespace

NcclPlan nccl_plan(DType dtype, std::optional<ReduceOp> op) {
  NcclPlan plan;
  plan.type = nccl_type(dtype);
  if (op) {
    check_supported(dtype, *op);  // bool: Min/Max only; Average: floating only
    plan.op = nccl_op(*op);
    plan.divide_by_size = *op == ReduceOp::Average;
  }
  return plan;
}

const char* to_string(NcclType type) {
  switch (type) {
    case NcclType::Float32: return "ncclFloat32";
    case NcclType::Float64: return "ncclFloat64";
    case NcclType::Float16: return "ncclFloat16";
    case NcclType::BFloat16: return "ncclBfloat16";
    case NcclType::Int32: return "ncclInt32";
    case NcclType::Int64: return "ncclInt64";
    case NcclType::Uint8: return "ncclUint8";
  }
  return "?";
}

const char* to_string(NcclOp op) {
  switch (op) {
    case NcclOp::Sum: return "ncclSum";
    case NcclOp::Prod: return "ncclProd";
    case NcclOp::Min: return "ncclMin";
    case NcclOp::Max: return "ncclMax";
  }
  return "?";
}

}  // namespace tnt::comm
