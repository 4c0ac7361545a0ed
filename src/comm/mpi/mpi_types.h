// Private: how tensor dtypes and reduce operations map onto MPI. MPI has no
// 16-bit float types, so float16 and bfloat16 travel as 2-byte contiguous
// types with user-defined reduction functions; MpiTypes owns those handles
// between MPI_Init and MPI_Finalize.
#pragma once

#include <mpi.h>

#include "comm/dtype.h"

namespace tnt::comm {

/// MPI datatypes and reduction operations for every supported DType.
class MpiTypes {
 public:
  MpiTypes();  // requires MPI to be initialized
  ~MpiTypes();
  MpiTypes(const MpiTypes&) = delete;
  MpiTypes& operator=(const MpiTypes&) = delete;

  MPI_Datatype datatype(DType dtype) const;
  /// The MPI operation for `op` on `dtype` (Average reduces with Sum);
  /// throws tnt::Error when the combination makes no sense (e.g. sum of bool).
  MPI_Op op(DType dtype, ReduceOp op) const;

 private:
  MPI_Datatype half_ = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat_ = MPI_DATATYPE_NULL;
  MPI_Op half_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  MPI_Op bfloat_ops_[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
};

}  // namespace tnt::comm
