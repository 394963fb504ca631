// RUN: titan-opt %s -titan-decompose-swiglu | FileCheck %s
// Decomposing and re-canonicalizing gives back the fused op.
// RUN: titan-opt %s -titan-decompose-swiglu -canonicalize | FileCheck %s --check-prefix=ROUNDTRIP

// CHECK-LABEL: func.func @ffn
// CHECK-SAME: (%[[G:.*]]: tensor<2x8x48xbf16>, %[[U:.*]]: tensor<2x8x48xbf16>)
// CHECK-NEXT: %[[S:.*]] = titan.silu %[[G]] : tensor<2x8x48xbf16>
// CHECK-NEXT: %[[M:.*]] = titan.mul %[[S]], %[[U]] : tensor<2x8x48xbf16>
// CHECK-NEXT: return %[[M]]
// CHECK-NOT: titan.swiglu
// ROUNDTRIP-LABEL: func.func @ffn
// ROUNDTRIP-NEXT: titan.swiglu
// ROUNDTRIP-NEXT: return
func.func @ffn(%g: tensor<2x8x48xbf16>, %u: tensor<2x8x48xbf16>) -> tensor<2x8x48xbf16> {
  %0 = titan.swiglu %g, %u : tensor<2x8x48xbf16>
  return %0 : tensor<2x8x48xbf16>
}
