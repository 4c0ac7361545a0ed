// The precision a model computes its forward pass in (CompileOptions().
// mixed_precision): float32 master weights either way.
#pragma once

namespace tnt {

/// None: float32 throughout. BFloat16: forward under LibTorch's autocast to
/// bfloat16 (CPU and GPU; float32's range, so no loss scaling needed).
/// Float16: autocast to float16 (GPU only in LibTorch 1.13) with dynamic
/// loss scaling.
enum class MixedPrecision { None, BFloat16, Float16 };

}  // namespace tnt
