// The reductions collectives offer.
#pragma once

namespace tnt::comm {

enum class ReduceOp { Sum, Average, Min, Max, Product };

/// "sum", "average", ...
const char* to_string(ReduceOp op);

}  // namespace tnt::comm
