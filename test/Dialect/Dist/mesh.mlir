// RUN: titan-opt %s | FileCheck %s
// RUN: titan-opt %s | titan-opt | FileCheck %s
// RUN: titan-opt %s --mlir-print-op-generic | titan-opt | FileCheck %s

// #dist.mesh's load_balanced: without the key a mesh takes the default of
// MeshAxes.h's table, cp load-balanced when cp > 1; a written list is kept,
// the empty one (a contiguous cp) included. The key is printed only when
// the list is not the default, so a mesh written with its default prints
// as one without the key (the same attribute). The keys may come in any
// order; they are printed in the mesh's.
// CHECK-LABEL: func.func private @meshes()
// CHECK-SAME: cp_contiguous = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>
// CHECK-SAME: cp_default = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1>
// CHECK-SAME: cp_written = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1>
// CHECK-SAME: no_cp_default = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>
// CHECK-SAME: no_cp_empty = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>
// CHECK-SAME: no_cp_listed = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2, load_balanced = ["cp"]>
// CHECK-SAME: reordered = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2>
// CHECK-SAME: tp_listed = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2, load_balanced = ["tp"]>
func.func private @meshes() attributes {
  cp_default = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1>,
  cp_written = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>,
  cp_contiguous = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>,
  no_cp_default = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>,
  no_cp_empty = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2, load_balanced = []>,
  no_cp_listed = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2, load_balanced = ["cp"]>,
  reordered = #dist.mesh<tp = 2, cp = 2, pp = 1, dp_shard = 1, dp_replicate = 1>,
  tp_listed = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2, load_balanced = ["tp"]>
}
