// DType and ReduceOp: what a tensor's dtype is to every backend, their
// names in messages, and which reductions make sense on which dtype.
#include "comm/dtype.h"

#include <tarantella/base/error.h>

namespace tnt::comm {

DType dtype_of(const torch::Tensor& tensor) {
  switch (tensor.scalar_type()) {
    case torch::kFloat32: return DType::Float32;
    case torch::kFloat64: return DType::Float64;
    case torch::kFloat16: return DType::Float16;
    case torch::kBFloat16: return DType::BFloat16;
    case torch::kInt32: return DType::Int32;
    case torch::kInt64: return DType::Int64;
    case torch::kUInt8: return DType::UInt8;
    case torch::kBool: return DType::Bool;
    default: break;
  }
  TNT_CHECK(false, "collectives do not support dtype ", tensor.scalar_type(),
            ": convert the tensor to float32, float64, float16, bfloat16, int32, int64, uint8 or "
            "bool first (e.g. tensor.to(torch::kFloat32))");
  return DType::Float32;
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::UInt8: return "uint8";
    case DType::Bool: return "bool";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
         dtype == DType::BFloat16;
}

void check_supported(DType dtype, ReduceOp op) {
  TNT_CHECK(dtype != DType::Bool || op == ReduceOp::Min || op == ReduceOp::Max,
            "reduce operation '", to_string(op), "' is not defined for bool tensors: use Max for "
            "a logical or, Min for a logical and, or convert to an integer dtype");
  TNT_CHECK(op != ReduceOp::Average || is_floating(dtype), "reduce operation 'average' on ",
            to_string(dtype), " tensors would truncate: use Sum and divide, or convert to a "
            "floating dtype");
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Average: return "average";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Product: return "product";
  }
  return "?";
}

}  // namespace tnt::comm
