// MPI's view of DType and ReduceOp (mpi_types.h): 16-bit floats as 2-byte
// contiguous types whose reductions widen to float, combine and round back.
#include "comm/mpi/mpi_types.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

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

}  // namespace tnt::comm
