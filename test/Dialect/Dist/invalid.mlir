// RUN: titan-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{mesh axis 'dp_shard' must have size >= 1, got 0}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 0, cp = 1, tp = 1>} {}

// -----

// expected-error @+1 {{dimension 0 names unknown mesh axis "dp"}}
func.func private @f(tensor<4xf32> {dist.sharding = #dist.sharding<[["dp"]]>})

// -----

// expected-error @+1 {{mesh axis 'tp' appears more than once in a sharding}}
func.func private @f(tensor<4x4xf32> {dist.sharding = #dist.sharding<[["tp"], ["tp"]]>})

// -----

// expected-error @+1 {{sharding of dimension 0 must be a list of mesh axes}}
func.func private @f(tensor<4xf32> {dist.sharding = #dist.sharding<["tp"]>})

// -----

func.func @no_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.all_gather_start' op needs a #dist.mesh on an enclosing op ('dist.mesh')}}
  %f = dist.all_gather_start %x axes ["tp"] dim 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
  %f_v = dist.wait %f : !dist.future<tensor<8xf32>>
  return
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @unknown_axis(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_gather_start' op names unknown mesh axis 'dp'}}
    %f = dist.all_gather_start %x axes ["dp"] dim 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<8xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @twice(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_gather_start' op names mesh axis 'tp' twice}}
    %f = dist.all_gather_start %x axes ["tp", "tp"] dim 0 : tensor<4xf32> -> !dist.future<tensor<16xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<16xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @no_axes(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_gather_start' op needs at least one mesh axis}}
    %f = dist.all_gather_start %x axes [] dim 0 : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @gather_shape(%x: tensor<4x2xf32>) {
    // expected-error @+1 {{'dist.all_gather_start' op result type 'tensor<4x4xf32>' must be 'tensor<8x2xf32>' for a group of 2 ranks}}
    %f = dist.all_gather_start %x axes ["tp"] dim 0 : tensor<4x2xf32> -> !dist.future<tensor<4x4xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4x4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @gather_dim(%x: tensor<4x2xf32>) {
    // expected-error @+1 {{'dist.all_gather_start' op dim 2 is out of range for rank 2}}
    %f = dist.all_gather_start %x axes ["tp"] dim 2 : tensor<4x2xf32> -> !dist.future<tensor<4x2xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4x2xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 4>} {
  func.func @scatter_padded(%x: tensor<6xf32>) {
    // An uneven split pads: 6 over 4 ranks is 4 parts of 2.
    // expected-error @+1 {{'dist.reduce_scatter_start' op result type 'tensor<1xf32>' must be 'tensor<2xf32>' for a group of 4 ranks}}
    %f = dist.reduce_scatter_start %x axes ["tp"] dim 0 : tensor<6xf32> -> !dist.future<tensor<1xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<1xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @reduction(%x: tensor<4xf32>) {
    // expected-error @+2 {{expected ::titan::dist::ReductionKind to be one of: sum, avg, max}}
    // expected-error @+1 {{failed to parse Dist_ReductionKindAttr parameter 'value'}}
    %f = dist.all_reduce_start %x axes ["tp"] reduction min : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @all_reduce_type(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_reduce_start' op result type 'tensor<8xf32>' must equal the input type 'tensor<4xf32>'}}
    %f = dist.all_reduce_start %x axes ["tp"] : tensor<4xf32> -> !dist.future<tensor<8xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<8xf32>>
    return
  }
}

// -----

func.func @replicate_needs_mesh(%x: tensor<4xf32>) {
  // expected-error @+1 {{'dist.replicate' op needs a #dist.mesh on an enclosing op ('dist.mesh')}}
  %r = dist.replicate %x axes ["tp"] : tensor<4xf32>
  return
}

// -----

func.func @wait_type(%f: !dist.future<tensor<4xf32>>) {
  // expected-error @+1 {{'dist.wait' op failed to verify that result type is the future's value type}}
  %r = "dist.wait"(%f) : (!dist.future<tensor<4xf32>>) -> tensor<8xf32>
  return
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @all_to_all_shape(%x: tensor<8x8xf32>) {
    // expected-error @+1 {{'dist.all_to_all_start' op result type 'tensor<8x8xf32>' must be 'tensor<4x16xf32>' for a group of 2 ranks}}
    %f = dist.all_to_all_start %x axes ["tp"] split 0 concat 1 : tensor<8x8xf32> -> !dist.future<tensor<8x8xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<8x8xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @all_to_all_dim(%x: tensor<8x8xf32>) {
    // expected-error @+1 {{'dist.all_to_all_start' op dim 2 is out of range for rank 2}}
    %f = dist.all_to_all_start %x axes ["tp"] split 0 concat 2 : tensor<8x8xf32> -> !dist.future<tensor<4x16xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4x16xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @all_to_all_divisible(%x: tensor<3x8xf32>) {
    // expected-error @+1 {{'dist.all_to_all_start' op input dimension 0 (3) is not divisible by the 2 ranks of the group}}
    %f = dist.all_to_all_start %x axes ["tp"] split 0 concat 1 : tensor<3x8xf32> -> !dist.future<tensor<1x16xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<1x16xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @broadcast_root(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.broadcast_start' op root 2 is not a rank of the group of 2}}
    %f = dist.broadcast_start %x axes ["tp"] root 2 : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @broadcast_type(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.broadcast_start' op result type 'tensor<8xf32>' must equal the input type 'tensor<4xf32>'}}
    %f = dist.broadcast_start %x axes ["tp"] root 0 : tensor<4xf32> -> !dist.future<tensor<8xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<8xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @send_recv_axes(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.send_recv_start' op shifts along exactly one mesh axis, got 2}}
    %f = dist.send_recv_start %x axes ["dp_shard", "tp"] shift 1 : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %f_v = dist.wait %f : !dist.future<tensor<4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @shard_offset_axis() {
    // expected-error @+1 {{'dist.shard_offset' op names unknown mesh axis 'ep'}}
    %o = dist.shard_offset axes ["ep"] stride 4 : tensor<i32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @shard_offset_range() {
    // expected-error @+1 {{'dist.shard_offset' op stride 4294967296 gives offsets outside the i32 range}}
    %o = dist.shard_offset axes ["tp"] stride 4294967296 : tensor<i32>
    return
  }
}

// -----

// Shardings of function arguments must fit the tensor and the mesh.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  // Only dp_shard, innermost, may split unevenly (FSDP padding).
  // expected-error @+1 {{argument 0 of type 'tensor<6x4xf32>' cannot be sharded as #dist.sharding<[["dp_shard", "tp"]]>: dimension 0 (3) is not divisible by the 2 shards of 'tp'}}
  func.func @indivisible(%w: tensor<6x4xf32> {dist.sharding = #dist.sharding<[["dp_shard", "tp"]]>}) {
    return
  }
}

// -----

// After partitioning the argument has its per-rank type: nothing to divide.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  func.func @partitioned(%w: tensor<3x4xf32> {dist.sharding = #dist.sharding<[["dp_shard", "tp"]]>}) attributes {dist.partitioned} {
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 2>} {
  // expected-error @+1 {{argument 0 sharding #dist.sharding<[[], ["tp"]]> has more dimensions than its type 'tensor<4xf32>'}}
  func.func @too_many_dims(%w: tensor<4xf32> {dist.sharding = #dist.sharding<[[], ["tp"]]>}) {
    return
  }
}

// -----

// expected-error @+1 {{argument 0 has a sharding but no enclosing op has a #dist.mesh ('dist.mesh')}}
func.func @no_mesh(%w: tensor<4xf32> {dist.sharding = #dist.sharding<[["tp"]]>}) {
  return
}

// -----

// expected-error @+1 {{'dist.sharding' must be a #dist.sharding, got 3 : i64}}
func.func @not_a_sharding(%w: tensor<4xf32> {dist.sharding = 3}) {
  return
}

// -----

// expected-error @+1 {{'dist.mesh' must be a #dist.mesh, got "tp"}}
module attributes {dist.mesh = "tp"} {
}

// -----

// expected-error @+1 {{'dist.keep_gathered' must be a unit attribute}}
func.func @keep_gathered(%w: tensor<4xf32> {dist.keep_gathered = 1}) {
  return
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @never_waited(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_reduce_start' op future is never waited (every collective needs one dist.wait)}}
    %f = dist.all_reduce_start %x axes ["dp_shard"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @waited_twice(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_reduce_start' op future is waited 2 times (it must be waited exactly once)}}
    %f = dist.all_reduce_start %x axes ["dp_shard"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    %a = dist.wait %f : !dist.future<tensor<4xf32>>
    %b = dist.wait %f : !dist.future<tensor<4xf32>>
    return %a, %b : tensor<4xf32>, tensor<4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func private @sink(!dist.future<tensor<4xf32>>)
  func.func @escapes(%x: tensor<4xf32>) {
    // expected-error @+1 {{'dist.all_reduce_start' op future must be used only by dist.wait, not by 'func.call'}}
    %f = dist.all_reduce_start %x axes ["dp_shard"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    func.call @sink(%f) : (!dist.future<tensor<4xf32>>) -> ()
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @waited_in_another_block(%x: tensor<4xf32>) -> tensor<4xf32> {
    // expected-error @+1 {{'dist.all_reduce_start' op future must be waited in the block that starts it}}
    %f = dist.all_reduce_start %x axes ["dp_shard"] : tensor<4xf32> -> !dist.future<tensor<4xf32>>
    llvm.br ^next
  ^next:
    %a = dist.wait %f : !dist.future<tensor<4xf32>>
    return %a : tensor<4xf32>
  }
}

// -----

// expected-error @+1 {{mesh world size pp 1 x dp_replicate 4294967296 x dp_shard 4294967296 x cp 1 x tp 1 exceeds 2^31 - 1 ranks}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 4294967296, dp_shard = 4294967296, cp = 1, tp = 1>} {
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 2, cp = 1, tp = 1>} {
  func.func @huge(%x: tensor<4611686018427387904x4xf32>) {
    // expected-error @+1 {{'dist.all_reduce_start' op has a tensor of type 'tensor<4611686018427387904x4xf32>' whose size in bytes overflows a 64-bit integer}}
    %f = dist.all_reduce_start %x axes ["dp_shard"] : tensor<4611686018427387904x4xf32> -> !dist.future<tensor<4611686018427387904x4xf32>>
    %v = dist.wait %f : !dist.future<tensor<4611686018427387904x4xf32>>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
    // expected-error @+1 {{'dist.sharding_constraint' op cannot shard 'tensor<2x3xf32>' as #dist.sharding<[[], ["tp"]]>: dimension 1 (3) is not divisible by the 2 shards of 'tp'}}
    %c = dist.sharding_constraint %x to <[[], ["tp"]]> : tensor<2x3xf32>
    return %c : tensor<2x3xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
    // expected-error @+1 {{'dist.shardings' must list one #dist.sharding per result (1), got []}}
    %y = titan.add %x, %x {dist.shardings = []} : tensor<2x4xf32>
    return %y : tensor<2x4xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @f(%a: tensor<6x2xf32>) -> tensor<3x2xf32> {
    // expected-error @+1 {{'dist.local_shard' op splits 'tensor<6x2xf32>' along 0 into 4 equal parts of which each rank keeps two, not into 'tensor<3x2xf32>'}}
    %l = dist.local_shard %a axes ["cp"] dim 0 : tensor<6x2xf32> -> tensor<3x2xf32>
    return %l : tensor<3x2xf32>
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @f(%q: tensor<2x3x4x2xf32>, %k: tensor<2x3x2x2xf32>) {
    // expected-error @+1 {{'dist.ring_attention' op holds two load-balanced chunks per rank: the local sequence 3 must be even}}
    %o:2 = dist.ring_attention %q, %k, %k axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x3x4x2xf32>, tensor<2x3x2x2xf32>, tensor<2x3x2x2xf32>) -> (tensor<2x3x4x2xf32>, tensor<2x4x3xf32>)
    return
  }
}

// -----

// A mesh whose load_balanced list leaves cp out splits it contiguously: one
// part per rank.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @f(%a: tensor<6x2xf32>) -> tensor<2x2xf32> {
    // expected-error @+1 {{'dist.local_shard' op splits 'tensor<6x2xf32>' along 0 into 2 equal parts of which each rank keeps one, not into 'tensor<2x2xf32>'}}
    %l = dist.local_shard %a axes ["cp"] dim 0 : tensor<6x2xf32> -> tensor<2x2xf32>
    return %l : tensor<2x2xf32>
  }
}

// -----

// Context-parallel attention needs the load-balanced layout.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @f(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>) {
    // expected-error @+1 {{'dist.context_attention' op needs its axes ["cp"] split load-balanced (#dist.mesh's load_balanced)}}
    %o:2 = dist.context_attention %q, %k, %k axes ["cp"] kv_shift 0 {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = []>} {
  func.func @f(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>) {
    // expected-error @+1 {{'dist.ring_attention' op needs its axes ["cp"] split load-balanced (#dist.mesh's load_balanced)}}
    %o:2 = dist.ring_attention %q, %k, %k axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    return
  }
}

// -----

// expected-error @+1 {{load_balanced names unknown mesh axis "sp"}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["sp"]>} {}

// -----

// expected-error @+1 {{load_balanced names unknown mesh axis 2}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = [2]>} {}

// -----

// expected-error @+1 {{mesh axis 'cp' appears more than once in load_balanced}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp", "cp"]>} {}

// -----

// expected-error @+1 {{#dist.mesh is missing 'tp'}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2>} {}

// -----

// expected-error @+1 {{duplicate 'cp' in #dist.mesh}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, cp = 2, tp = 1>} {}

// -----

// expected-error @+1 {{duplicate 'load_balanced' in #dist.mesh}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = [], load_balanced = ["cp"]>} {}

// -----

// expected-error @+1 {{#dist.mesh has no key 'sp' (the mesh axes and load_balanced)}}
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, sp = 2, tp = 1>} {}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>) {
    // expected-error @+1 {{dim 2 must be a row dimension of the GEMMs (before the last of rank 3)}}
    %g:2 = dist.all_gather_linear %x, [%w] axes ["tp"] dim 2 : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> (tensor<2x4x16xf32>, tensor<2x4x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>) {
    // expected-error @+1 {{output 'tensor<2x8x8xf32>' must be the GEMM's 'tensor<2x8x6xf32>'}}
    %g:2 = dist.all_gather_linear %x, [%w] axes ["tp"] dim 1 : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> (tensor<2x8x8xf32>, tensor<2x8x8xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>) {
    // expected-error @+1 {{gathers 'tensor<2x4x8xf32>' over 2 ranks into 'tensor<2x8x8xf32>', not 'tensor<2x4x8xf32>'}}
    %g:2 = dist.all_gather_linear %x, [%w] axes ["tp"] dim 1 : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> (tensor<2x4x8xf32>, tensor<2x4x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x4xf32>, %w: tensor<8x4xf32>) {
    // expected-error @+1 {{needs 1 to 16 pairs of (lhs, weight), not 3 operands}}
    %r = dist.linear_reduce_scatter %h, %w, %h axes ["tp"] dim 1 : (tensor<2x8x4xf32>, tensor<8x4xf32>, tensor<2x8x4xf32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x4xf32>, %w: tensor<8x4xf32>) {
    // expected-error @+1 {{reduce-scatters 'tensor<2x8x8xf32>' into 'tensor<2x4x8xf32>', not 'tensor<2x8x8xf32>'}}
    %r = dist.linear_reduce_scatter %h, %w axes ["tp"] dim 1 : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x8x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x4xf32>, %w: tensor<8x5xf32>) {
    // expected-error @+1 {{contracts a last dimension of 4 with a weight dimension of 5}}
    %r = dist.linear_reduce_scatter %h, %w axes ["tp"] dim 1 : (tensor<2x8x4xf32>, tensor<8x5xf32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf32>, %w: tensor<6x8xf32>) {
    // expected-error @+1 {{runs its ring over one mesh axis other than pp, not ["cp", "tp"]}}
    %g:2 = dist.all_gather_linear %x, [%w] axes ["cp", "tp"] dim 1 : (tensor<2x4x8xf32>, tensor<6x8xf32>) -> (tensor<2x16x8xf32>, tensor<2x16x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 2, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 1>} {
  func.func @f(%h: tensor<2x8x4xf32>, %w: tensor<8x4xf32>) {
    // expected-error @+1 {{runs its ring over one mesh axis other than pp, not ["pp"]}}
    %r = dist.linear_reduce_scatter %h, %w axes ["pp"] dim 1 : (tensor<2x8x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>) {
    // expected-error @+1 {{needs 1 to 16 pairs of (weight, weight scale) and one output per pair}}
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%w] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>) {
    // expected-error @+1 {{GEMM 0: takes K-major weights (rhs_transposed) only in the grad_input form}}
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%w, %s] axes ["tp"] dim 1 rhs_transposed : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>, %ws: tensor<1x6xf32>) {
    // expected-error @+1 {{GEMM 0: needs f32 weight scales of rank 0 or one per output column}}
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%w, %ws] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<1x6xf32>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>) {
    // expected-error @+1 {{output 'tensor<2x8x6xf8E4M3FN>' must have the GEMM's shape and be f32, bf16 or f16}}
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%w, %s] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> (tensor<2x8x8xf8E4M3FN>, tensor<2x8x6xf8E4M3FN>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%x: tensor<2x4x8xf8E4M3FN>, %s: tensor<f32>, %w: tensor<6x8xf8E4M3FN>) {
    // expected-error @+1 {{gathers 'tensor<2x4x8xf8E4M3FN>' over 2 ranks into 'tensor<2x8x8xf8E4M3FN>', not 'tensor<2x4x8xf8E4M3FN>'}}
    %g:2 = dist.all_gather_scaled_matmul %x, %s, [%w, %s] axes ["tp"] dim 1 : (tensor<2x4x8xf8E4M3FN>, tensor<f32>, tensor<6x8xf8E4M3FN>, tensor<f32>) -> (tensor<2x4x8xf8E4M3FN>, tensor<2x4x6xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<f32>, %w: tensor<8x6xf8E4M3FN>) {
    // expected-error @+1 {{needs 1 to 16 quads of (lhs, lhs scale, weight, weight scale), not 3 operands}}
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %w axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<2x1x6xf32>, %w: tensor<8x6xf8E4M3FN>, %ws: tensor<f32>) {
    // expected-error @+1 {{GEMM 0: needs an f32 lhs scale of rank 0 or one per lhs row}}
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %w, %ws axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<2x1x6xf32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<f32>, %w: tensor<8x5xf8E4M3FN>) {
    // expected-error @+1 {{GEMM 0: contracts a last dimension of 6 with a weight dimension of 5}}
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %w, %s axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x5xf8E4M3FN>, tensor<f32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<f32>, %w: tensor<8x6xf8E4M3FN>) {
    // expected-error @+1 {{reduce-scatters the GEMMs' sum into 'tensor<2x4x8xf32>', not 'tensor<2x8x8xf32>'}}
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %w, %s axes ["tp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x8x8xf32>
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 1, tp = 2>} {
  func.func @f(%h: tensor<2x8x6xf8E4M3FN>, %s: tensor<f32>, %w: tensor<8x6xf8E4M3FN>) {
    // expected-error @+1 {{runs its ring over one mesh axis other than pp}}
    %r = dist.scaled_matmul_reduce_scatter %h, %s, %w, %s axes ["pp"] dim 1 : (tensor<2x8x6xf8E4M3FN>, tensor<f32>, tensor<8x6xf8E4M3FN>, tensor<f32>) -> tensor<2x4x8xf32>
    return
  }
}

// -----

// Context-parallel attention's document starts cover the whole sequence:
// cp 2 x the local 4 positions.
module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @f(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>, %s: tensor<2x4xi32>) {
    // expected-error @+1 {{'dist.ring_attention' op document_starts must be 'tensor<2x8xi32>' (batch x the whole sequence, each position's document start), not 'tensor<2x4xi32>'}}
    %o:2 = dist.ring_attention %q, %k, %k documents %s axes ["cp"] rotate allgather {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x4xf32>)
    return
  }
}

// -----

module attributes {dist.mesh = #dist.mesh<pp = 1, dp_replicate = 1, dp_shard = 1, cp = 2, tp = 1, load_balanced = ["cp"]>} {
  func.func @f(%q: tensor<2x4x4x2xf32>, %k: tensor<2x4x2x2xf32>, %s: tensor<1x8xi32>) {
    // expected-error @+1 {{'dist.context_attention_grad' op document_starts must be 'tensor<2x8xi32>'}}
    %d:3 = dist.context_attention_grad %q, %k, %k, %q, %q, %q documents %s axes ["cp"] kv_shift 0 {scale = 0.5 : f64} : (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x2xf32>, tensor<1x8xi32>) -> (tensor<2x4x4x2xf32>, tensor<2x4x2x2xf32>, tensor<2x4x2x2xf32>)
    return
  }
}
