#include "comm/dtype.h"
#include "comm/mpi_types.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <tarantella/base/error.h>

#include "comm/float16.h"

namespace tnt::comm {
namespace {

// Index of a reduction in the custom-op tables (Average reduces with Sum).
int op_slot(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return 0;
    case ReduceOp::Min: return 1;
    case ReduceOp::Max: return 2;
    case ReduceOp::Product: return 3;
  }
  return 0;
}

// Reductions on 16-bit floats: widen to float, combine, round back — the
// same rounding a float16 tensor addition in LibTorch performs. Sums (what
// compressed gradients need) are the loops of float16.h, vectorized: the
// scalar ones made float16 compression slower than none (bench/scaling).
template <typename T, int Slot>
void reduce16(void* in, void* inout, int* len, MPI_Datatype*) {
  if constexpr (Slot == 0) {
    const auto* a = static_cast<const std::uint16_t*>(in);
    auto* b = static_cast<std::uint16_t*>(inout);
    if constexpr (std::is_same_v<T, c10::Half>) {
      detail::sum_float16(a, b, *len);
    } else {
      detail::sum_bfloat16(a, b, *len);
    }
  } else {
    const T* a = static_cast<const T*>(in);
    T* b = static_cast<T*>(inout);
    for (int i = 0; i < *len; ++i) {
      const float x = static_cast<float>(a[i]);
      const float y = static_cast<float>(b[i]);
      float r = 0.0f;
      if constexpr (Slot == 1) r = std::min(x, y);
      if constexpr (Slot == 2) r = std::max(x, y);
      if constexpr (Slot == 3) r = x * y;
      b[i] = static_cast<T>(r);
    }
  }
}

template <typename T>
void create_ops(MPI_Op (&ops)[4]) {
  MPI_Op_create(&reduce16<T, 0>, 1, &ops[0]);
  MPI_Op_create(&reduce16<T, 1>, 1, &ops[1]);
  MPI_Op_create(&reduce16<T, 2>, 1, &ops[2]);
  MPI_Op_create(&reduce16<T, 3>, 1, &ops[3]);
}

void free_ops(MPI_Op (&ops)[4]) {
  for (MPI_Op& op : ops) {
    if (op != MPI_OP_NULL) MPI_Op_free(&op);
  }
}

}  // namespace

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

MpiTypes::MpiTypes() {
  MPI_Type_contiguous(2, MPI_BYTE, &half_);
  MPI_Type_commit(&half_);
  MPI_Type_contiguous(2, MPI_BYTE, &bfloat_);
  MPI_Type_commit(&bfloat_);
  create_ops<c10::Half>(half_ops_);
  create_ops<c10::BFloat16>(bfloat_ops_);
}

MpiTypes::~MpiTypes() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // a group handle outlived the runtime (as in ~MpiBackend)
  free_ops(half_ops_);
  free_ops(bfloat_ops_);
  if (half_ != MPI_DATATYPE_NULL) MPI_Type_free(&half_);
  if (bfloat_ != MPI_DATATYPE_NULL) MPI_Type_free(&bfloat_);
}

MPI_Datatype MpiTypes::datatype(DType dtype) const {
  switch (dtype) {
    case DType::Float32: return MPI_FLOAT;
    case DType::Float64: return MPI_DOUBLE;
    case DType::Float16: return half_;
    case DType::BFloat16: return bfloat_;
    case DType::Int32: return MPI_INT32_T;
    case DType::Int64: return MPI_INT64_T;
    case DType::UInt8: return MPI_UINT8_T;
    case DType::Bool: return MPI_C_BOOL;
  }
  return MPI_BYTE;
}

void check_supported(DType dtype, ReduceOp op) {
  TNT_CHECK(dtype != DType::Bool || op == ReduceOp::Min || op == ReduceOp::Max,
            "reduce operation '", to_string(op), "' is not defined for bool tensors: use Max for "
            "a logical or, Min for a logical and, or convert to an integer dtype");
  TNT_CHECK(op != ReduceOp::Average || is_floating(dtype), "reduce operation 'average' on ",
            to_string(dtype), " tensors would truncate: use Sum and divide, or convert to a "
            "floating dtype");
}

MPI_Op MpiTypes::op(DType dtype, ReduceOp op) const {
  check_supported(dtype, op);
  if (dtype == DType::Float16) return half_ops_[op_slot(op)];
  if (dtype == DType::BFloat16) return bfloat_ops_[op_slot(op)];
  if (dtype == DType::Bool) return op == ReduceOp::Min ? MPI_LAND : MPI_LOR;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Average: return MPI_SUM;
    case ReduceOp::Min: return MPI_MIN;
    case ReduceOp::Max: return MPI_MAX;
    case ReduceOp::Product: return MPI_PROD;
  }
  return MPI_SUM;
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
