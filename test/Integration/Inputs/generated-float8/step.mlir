// Float8's tensorwise casts as titan-expand-float8 and bufferization leave
// them (kernel calls in a planned arena), for generated-float8.test:
//   gate, up: bf16 [N]; y = swiglu(gate, up); y's amax, e4m3 scale and
//   cast; x's amax, e5m2 scale (a power of two) and cast.
// Arena (bytes): gate 0, up 1M, x 2M, y 3M, amax_y 4M, scale_y 4M+256,
//   z: bf16 [131 x 1031]; its amax, e4m3 scale, cast, and (after a copy
//   reading the scale, as the GEMM does) its transposed cast.
// Arena (bytes): gate 0, up 1M, x 2M, y 3M, amax_y 4M, scale_y 4M+256,
// q_y 5M, amax_x 6M, scale_x 6M+256, q_x 7M, z 10M, amax_z 11M, scale_z
// 11M+256, q_z 12M, q_z transposed 13M; N = 2^17 + 2^12 + 5 elements (more
// than one thread's work, a partial span); z's rows and columns are no
// multiple of a tile's (partial tiles, spans of 64 rows and a partial
// one). A copy reads each scale afterwards, as the scaled GEMM does, so
// the fused cast still writes it.
//   SwiGLU's backward on 131 x 1031 (gate g2 16M, up u2 17M, dy 18M): its
//   gradients' amaxes (21M, 21M+512), e5m2 scales (21M+256, 21M+768),
//   copies reading them, and each gradient's cast in both layouts (dg 22M,
//   23M transposed; du 24M, 25M), after a transposed cast of u2 with z's
//   scale (26M). The gradients are read by nothing else, so the casts
//   recompute them; a second swiglu_grad writes them (dg 19M, du 20M) as
//   the reference for the codes.
module attributes {kernel.arena_bytes = 30408704 : i64, kernel.slots = {"param:dg" = array<i64: 19922944, 270122>, "param:dy2" = array<i64: 18874368, 270122>, "param:du" = array<i64: 20971520, 270122>, "param:g2" = array<i64: 16777216, 270122>, "param:gate" = array<i64: 0, 270346>, "param:u2" = array<i64: 17825792, 270122>, "param:up" = array<i64: 1048576, 270346>, "param:x" = array<i64: 2097152, 270346>, "param:z" = array<i64: 10485760, 270122>}} {
  func.func @step(%gate: memref<135173xbf16> {kernel.slot = "param:gate"}, %up: memref<135173xbf16> {kernel.slot = "param:up"}, %x: memref<135173xbf16> {kernel.slot = "param:x"}, %z: memref<131x1031xbf16> {kernel.slot = "param:z"}, %g2: memref<131x1031xbf16> {kernel.slot = "param:g2"}, %u2: memref<131x1031xbf16> {kernel.slot = "param:u2"}, %dy2: memref<131x1031xbf16> {kernel.slot = "param:dy2"}, %dgk: memref<131x1031xbf16> {kernel.slot = "param:dg"}, %duk: memref<131x1031xbf16> {kernel.slot = "param:du"}) {
    %s = kernel.stream 0
    %y = kernel.alloc temporary {offset = 3145728 : i64} : memref<135173xbf16>
    kernel.call "swiglu"(%gate, %up : memref<135173xbf16>, memref<135173xbf16>) outs(%y : memref<135173xbf16>) on %s params []
    %ay = kernel.alloc temporary {offset = 4194304 : i64} : memref<f32>
    kernel.call "amax"(%y : memref<135173xbf16>) outs(%ay : memref<f32>) on %s params [0]
    %sy = kernel.alloc temporary {offset = 4194560 : i64} : memref<f32>
    kernel.call "float8_scale"(%ay : memref<f32>) outs(%sy : memref<f32>) on %s params [0, 4.480000e+02]
    %qy = kernel.alloc temporary {offset = 5242880 : i64} : memref<135173xf8E4M3FN>
    kernel.call "quantize"(%y, %sy : memref<135173xbf16>, memref<f32>) outs(%qy : memref<135173xf8E4M3FN>) on %s params [0, 0]
    %ky = kernel.alloc temporary {offset = 4194816 : i64} : memref<f32>
    kernel.copy %sy, %ky on %s : memref<f32>, memref<f32>
    %ax = kernel.alloc temporary {offset = 6291456 : i64} : memref<f32>
    kernel.call "amax"(%x : memref<135173xbf16>) outs(%ax : memref<f32>) on %s params [0]
    %sx = kernel.alloc temporary {offset = 6291712 : i64} : memref<f32>
    kernel.call "float8_scale"(%ax : memref<f32>) outs(%sx : memref<f32>) on %s params [1, 5.734400e+04]
    %qx = kernel.alloc temporary {offset = 7340032 : i64} : memref<135173xf8E5M2>
    kernel.call "quantize"(%x, %sx : memref<135173xbf16>, memref<f32>) outs(%qx : memref<135173xf8E5M2>) on %s params [1, 0]
    %kx = kernel.alloc temporary {offset = 6291968 : i64} : memref<f32>
    kernel.copy %sx, %kx on %s : memref<f32>, memref<f32>
    %az = kernel.alloc temporary {offset = 11534336 : i64} : memref<f32>
    kernel.call "amax"(%z : memref<131x1031xbf16>) outs(%az : memref<f32>) on %s params [0]
    %sz = kernel.alloc temporary {offset = 11534592 : i64} : memref<f32>
    kernel.call "float8_scale"(%az : memref<f32>) outs(%sz : memref<f32>) on %s params [0, 4.480000e+02]
    %qz = kernel.alloc temporary {offset = 12582912 : i64} : memref<131x1031xf8E4M3FN>
    kernel.call "quantize"(%z, %sz : memref<131x1031xbf16>, memref<f32>) outs(%qz : memref<131x1031xf8E4M3FN>) on %s params [0, 0]
    %kz = kernel.alloc temporary {offset = 11534848 : i64} : memref<f32>
    kernel.copy %sz, %kz on %s : memref<f32>, memref<f32>
    %tz = kernel.alloc temporary {offset = 13631488 : i64} : memref<1031x131xf8E4M3FN>
    kernel.call "quantize"(%z, %sz : memref<131x1031xbf16>, memref<f32>) outs(%tz : memref<1031x131xf8E4M3FN>) on %s params [0, 1]
    %tu = kernel.alloc temporary {offset = 27262976 : i64} : memref<1031x131xf8E5M2>
    kernel.call "quantize"(%u2, %sx : memref<131x1031xbf16>, memref<f32>) outs(%tu : memref<1031x131xf8E5M2>) on %s params [1, 1]
    %dg = kernel.alloc temporary {offset = 3670016 : i64} : memref<131x1031xbf16>
    %du = kernel.alloc temporary {offset = 8912896 : i64} : memref<131x1031xbf16>
    kernel.call "swiglu_grad"(%g2, %u2, %dy2 : memref<131x1031xbf16>, memref<131x1031xbf16>, memref<131x1031xbf16>) outs(%dg, %du : memref<131x1031xbf16>, memref<131x1031xbf16>) on %s params []
    %adg = kernel.alloc temporary {offset = 22020096 : i64} : memref<f32>
    kernel.call "amax"(%dg : memref<131x1031xbf16>) outs(%adg : memref<f32>) on %s params [0]
    %adu = kernel.alloc temporary {offset = 22020608 : i64} : memref<f32>
    kernel.call "amax"(%du : memref<131x1031xbf16>) outs(%adu : memref<f32>) on %s params [0]
    %sdg = kernel.alloc temporary {offset = 22020352 : i64} : memref<f32>
    kernel.call "float8_scale"(%adg : memref<f32>) outs(%sdg : memref<f32>) on %s params [1, 5.734400e+04]
    %qdg = kernel.alloc temporary {offset = 23068672 : i64} : memref<131x1031xf8E5M2>
    kernel.call "quantize"(%dg, %sdg : memref<131x1031xbf16>, memref<f32>) outs(%qdg : memref<131x1031xf8E5M2>) on %s params [1, 0]
    %kdg = kernel.alloc temporary {offset = 22021120 : i64} : memref<f32>
    kernel.copy %sdg, %kdg on %s : memref<f32>, memref<f32>
    %tdg = kernel.alloc temporary {offset = 24117248 : i64} : memref<1031x131xf8E5M2>
    kernel.call "quantize"(%dg, %sdg : memref<131x1031xbf16>, memref<f32>) outs(%tdg : memref<1031x131xf8E5M2>) on %s params [1, 1]
    %sdu = kernel.alloc temporary {offset = 22020864 : i64} : memref<f32>
    kernel.call "float8_scale"(%adu : memref<f32>) outs(%sdu : memref<f32>) on %s params [1, 5.734400e+04]
    %qdu = kernel.alloc temporary {offset = 25165824 : i64} : memref<131x1031xf8E5M2>
    kernel.call "quantize"(%du, %sdu : memref<131x1031xbf16>, memref<f32>) outs(%qdu : memref<131x1031xf8E5M2>) on %s params [1, 0]
    %kdu = kernel.alloc temporary {offset = 22021632 : i64} : memref<f32>
    kernel.copy %sdu, %kdu on %s : memref<f32>, memref<f32>
    %tdu = kernel.alloc temporary {offset = 26214400 : i64} : memref<1031x131xf8E5M2>
    kernel.call "quantize"(%du, %sdu : memref<131x1031xbf16>, memref<f32>) outs(%tdu : memref<1031x131xf8E5M2>) on %s params [1, 1]
    kernel.call "swiglu_grad"(%g2, %u2, %dy2 : memref<131x1031xbf16>, memref<131x1031xbf16>, memref<131x1031xbf16>) outs(%dgk, %duk : memref<131x1031xbf16>, memref<131x1031xbf16>) on %s params []
    return
  }
}
