//===- Hardware.cpp - the shipped hardware descriptions and their TOML ----===//
//
// Every number below names its source. Peaks, capacities and bandwidths are
// the vendors' data sheets; the fractions of them kernels reach
// (gemmEfficiency, attention*Efficiency, memoryEfficiency) come from
// independent measurements of single kernels (/work/shared/reference/
// published-performance.md: this workplace's H200 GEMM and copy rates,
// FlashAttention's published rates) and the network rates from NCCL's
// measured bus bandwidths. None of them is tuned to a training step's
// throughput: TorchTitan's and Megatron's step rows are the validation set
// the predictions are checked against, so fitting to them would hide the
// model's error.
//
//===----------------------------------------------------------------------===//

#include "titan/Cost/Hardware.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

// titan builds without C++ exceptions (as LLVM does): toml++ then reports
// parse errors through toml::parse_result.
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "titan/Contract/TomlParse.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <variant>

using namespace titan::cost;
using llvm::StringRef;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kTera = 1e12, kGiga = 1e9;

/// The H100 SXM (80 GB HBM3, 700 W) the other Hopper descriptions start
/// from.
Hardware h100() {
  Hardware hw;
  hw.name = "h100";
  hw.description = "NVIDIA H100 SXM 80 GB (700 W), 8 per node over NVLink 4, "
                   "400 Gb/s InfiniBand per GPU";
  // NVIDIA H100 data sheet (SXM, dense): BF16 989.4, FP8 1978.9 TFLOP/s.
  hw.peakFlopsBF16 = 989 * kTera;
  hw.peakFlopsFP8 = 1979 * kTera;
  // The CUDA target's f32 GEMMs use CUBLAS_COMPUTE_32F (runtime/cuda/
  // LinearGemm.cpp: no TF32), so f32 runs at the FP32 non-tensor peak:
  // 67 TFLOP/s (data sheet).
  hw.peakFlopsF32 = 67 * kTera;
  // bf16 8192^3 GEMMs measured 769-798 TFLOP/s on this workplace's H200
  // (the same GH100 die and clocks as the H100 SXM): 0.79 of peak; with
  // the curve's factor 0.996 at 1.1 TFLOP that is 0.79.
  hw.gemmEfficiency = 0.79;
  // A GEMM's fixed cost (wave quantization, the tail) ~5 us at ~780
  // TFLOP/s: 4 GFLOP reaches half the large-GEMM rate.
  hw.gemmHalfFlops = 4e9;
  // Fused attention (cuDNN's SDPA, FlashAttention-3's algorithm on Hopper):
  // FlashAttention-3 reaches ~740 TFLOP/s forward at long sequences (0.75),
  // FlashAttention-2 ~335 (0.34); causal seq 8192 head dim 128 sits below
  // the best case, so 0.6 forward. The backward runs at ~0.75 of the
  // forward's rate in FlashAttention-3's paper (more recomputation and
  // atomics): 0.45.
  hw.attentionForwardEfficiency = 0.6;
  hw.attentionBackwardEfficiency = 0.45;
  // 80 GiB HBM3 at 3.35 TB/s (data sheet). Device-to-device copies reach
  // ~4.3 of 4.8 TB/s on the H200 (0.9); titan's elementwise and row
  // kernels are assumed to reach 0.85 of the bandwidth.
  hw.memoryBytes = 80 * kGiB;
  hw.memoryBytesPerSecond = 3.35 * kTera;
  hw.memoryEfficiency = 0.85;
  // A kernel's fixed cost: the CUDA target replays a step as a CUDA graph
  // (pp = 1; runtime/cuda/CudaDevice.cpp), where back-to-back kernels are
  // ~1 us apart, plus a kernel's ramp and tail: 2 us.
  hw.kernelOverheadSeconds = 2e-6;
  // NVLink 4: NCCL all-gather/reduce-scatter bus bandwidth ~370 GB/s on 8
  // GPUs (nccl-tests); a ring step inside the node ~2 us (NCCL's LL
  // protocol latency over NVLink).
  hw.devicesPerNode = 8;
  hw.intraNodeBusBytesPerSecond = 370 * kGiga;
  hw.intraNodeLatencySeconds = 2e-6;
  // 400 Gb/s InfiniBand NDR per GPU: 46-48 GB/s achieved per NIC; a step
  // that crosses the network ~6 us (NIC and switch latency plus NCCL's
  // proxy).
  hw.interNodeBytesPerSecond = 47 * kGiga;
  hw.interNodeLatencySeconds = 6e-6;
  // The host (training.enable_cpu_offload), assumptions not measured here:
  // PCIe Gen5 x16 moves 64 GB/s each way (the H100 data sheet's 128 GB/s
  // both ways), pinned copies ~0.8 of it: 51 GB/s. A DGX H100's two Xeon
  // 8480C have 8 DDR5-4800 channels each, 614 GB/s; streaming kernels
  // ~0.65 of it: 400 GB/s for the node's 8 ranks.
  hw.hostLinkBytesPerSecond = 51 * kGiga;
  hw.hostMemoryBytesPerSecond = 400 * kGiga;
  return hw;
}

std::vector<Hardware> buildBuiltins() {
  std::vector<Hardware> all;
  all.push_back(h100());

  // TorchTitan's benchmark machines (benchmarks/llama3_h100_202412_
  // torchtitan.md): H100 with 96 GB HBM2e capped at 500 W. Assumptions:
  // the cap lowers sustained tensor-core clocks under dense GEMMs by ~15%
  // (a large bf16 GEMM draws ~700 W at full clocks), so the compute
  // efficiencies are the H100's x 0.85; six 16 GB HBM2e stacks at ~400 GB/s
  // each (the H100 PCIe's HBM2e rate per stack): 2.4 TB/s.
  Hardware h96 = h100();
  h96.name = "h100-96gb";
  h96.description = "NVIDIA H100 96 GB HBM2e at a 500 W cap (TorchTitan's "
                    "benchmark machines), 8 per node, 400 Gb/s per GPU";
  h96.gemmEfficiency *= 0.85;
  h96.attentionForwardEfficiency *= 0.85;
  h96.attentionBackwardEfficiency *= 0.85;
  h96.memoryBytes = 96 * kGiB;
  h96.memoryBytesPerSecond = 2.4 * kTera;
  all.push_back(h96);

  // H200 SXM: the H100's compute (same peaks), 141 GB HBM3e at 4.8 TB/s
  // (data sheet). Measured here: bf16 8192^3 GEMM 769-798 TFLOP/s (0.79),
  // device-to-device copy ~4.3 TB/s (0.9).
  Hardware h200 = h100();
  h200.name = "h200";
  h200.description = "NVIDIA H200 SXM 141 GB, 8 per node over NVLink 4, "
                     "400 Gb/s InfiniBand per GPU";
  // 141 GB on the data sheet; the workplace's H200 reports about 139 GiB
  // usable (the device tool's description).
  h200.memoryBytes = 139 * kGiB;
  h200.memoryBytesPerSecond = 4.8 * kTera;
  h200.memoryEfficiency = 0.9;
  all.push_back(h200);

  // B200 (HGX B200 data sheet, 8 GPUs: dense BF16 18 PFLOP/s, FP8 36,
  // FP32 600 TFLOP/s, 1.44 TB HBM3e): per GPU 2.25 PFLOP/s, 4.5, 75
  // TFLOP/s, 180 GB at 8 TB/s; NVLink 5 (1.8 TB/s per GPU, twice NVLink
  // 4): bus bandwidth ~2 x 370 GB/s; 400 Gb/s ConnectX-7 per GPU. No
  // single-kernel measurements: the Hopper efficiencies are assumed.
  Hardware b200 = h100();
  b200.name = "b200";
  b200.description = "NVIDIA B200 180 GB, 8 per node over NVLink 5, 400 Gb/s "
                     "per GPU (Hopper's efficiencies assumed)";
  b200.peakFlopsBF16 = 2250 * kTera;
  b200.peakFlopsFP8 = 4500 * kTera;
  b200.peakFlopsF32 = 75 * kTera;
  b200.gemmHalfFlops = 9e9; // the same ~5 us fixed cost at 2.3x the rate
  // 180 GB on the data sheet, counted as the H100's "80 GB" is (80 GiB).
  b200.memoryBytes = 180 * kGiB;
  b200.memoryBytesPerSecond = 8 * kTera;
  b200.intraNodeBusBytesPerSecond = 740 * kGiga;
  all.push_back(b200);

  // A100 SXM 80 GB (data sheet): BF16 312 TFLOP/s dense, no FP8, FP32
  // 19.5 (non-tensor: the CUDA target's f32 GEMMs use no TF32); 2.039 TB/s
  // HBM2e; NVLink 3: NCCL bus bandwidth ~230 GB/s on 8 GPUs; 200 Gb/s HDR
  // per GPU (~23.5 GB/s achieved). Efficiencies: Ampere's cuBLAS reaches
  // about the same fraction of peak on large GEMMs as Hopper's (assumed);
  // attention at FlashAttention-2's ~0.5 (forward) on A100.
  Hardware a100 = h100();
  a100.name = "a100";
  a100.description = "NVIDIA A100 SXM 80 GB, 8 per node over NVLink 3, "
                     "200 Gb/s InfiniBand per GPU";
  a100.peakFlopsBF16 = 312 * kTera;
  a100.peakFlopsFP8 = 0;
  a100.peakFlopsF32 = 19.5 * kTera;
  a100.gemmHalfFlops = 1.3e9;
  a100.attentionForwardEfficiency = 0.5;
  a100.attentionBackwardEfficiency = 0.4;
  a100.memoryBytes = 80 * kGiB;
  a100.memoryBytesPerSecond = 2.039 * kTera;
  a100.intraNodeBusBytesPerSecond = 230 * kGiga;
  a100.interNodeBytesPerSecond = 23.5 * kGiga;
  // PCIe Gen4 x16 (32 GB/s each way, 0.8 of it) and a DGX A100's two EPYC
  // 7742 (8 DDR4-3200 channels each, 410 GB/s, 0.65 of it): assumptions.
  a100.hostLinkBytesPerSecond = 25.6 * kGiga;
  a100.hostMemoryBytesPerSecond = 266 * kGiga;
  all.push_back(a100);

  // The 2-core build machine (AMD EPYC, AVX-512): all ranks of a test
  // share one host (and its cores). Compute: scripts/calibrate-cpu.py's fit
  // (bench/results/cost-model-cpu.md: 4 one-rank copies of the debug model
  // at once, each class's kernel time against its work), measured while
  // other processes kept 1.34 of the 2 cores busy and the copies got 0.66:
  // the rates below are the fit x 2 / 0.66 (3.04), the idle machine's
  // estimate; efficiencies are ratios and kept. GEMMs 96.5 GFLOP/s fitted
  // -> 293 (gemm_efficiency 1: the "peak" is the rate the GEMMs reach;
  // Zen 5's two 512-bit FMA pipes at 2.6 GHz give 333); bf16 runs the f32
  // kernels on widened copies (matmul bf16 at ~0.55 of f32 in
  // bench/results/cpu-debugmodel-seq256.md): 163. Collectives
  // (bench/results/collectives-cpu-mpi.md, an idle run of Open MPI shared
  // memory with the progress thread): 8 B all_gather on 2 ranks 14 us (one
  // ring step), 64 MiB all_gather bus bandwidth 4.75 GB/s; the loaded
  // calibration's ring fit over 1 KiB-4 MiB (16 us, 6.1 GB/s) agrees.
  Hardware cpu;
  cpu.name = "cpu";
  cpu.description = "the CPU build machine (2 cores, AVX-512): every rank on "
                    "one host, sharing its cores; MPI over shared memory";
  cpu.peakFlopsF32 = 295 * kGiga;
  cpu.peakFlopsBF16 = 164 * kGiga;
  cpu.peakFlopsFP8 = 0;
  cpu.gemmEfficiency = 1;
  // The fit has no size curve (the debug model's GEMMs, 1.3e8 FLOPs on
  // average, already run near the FMA peak); a 1 MFLOP half size keeps a
  // curve for tiny GEMMs and moves the fitted GEMMs by 0.8% (peak 293 ->
  // 295 for the same times).
  cpu.gemmHalfFlops = 1e6;
  // Flash attention f32 against that GEMM rate (the same fit).
  cpu.attentionForwardEfficiency = 0.24;
  cpu.attentionBackwardEfficiency = 0.43;
  // Memory-bound kernels: 13.7 GB/s fitted -> 41.7; the host time between
  // kernels 7.9 us fitted -> 2.6 us a call.
  // Of the host's 23 GiB, room left for the system and the build.
  cpu.memoryBytes = 16 * kGiB;
  cpu.memoryBytesPerSecond = 41.7 * kGiga;
  cpu.memoryEfficiency = 1;
  cpu.kernelOverheadSeconds = 2.6e-6;
  cpu.devicesPerNode = 64;
  cpu.intraNodeBusBytesPerSecond = 4.75 * kGiga;
  cpu.intraNodeLatencySeconds = 12e-6;
  cpu.interNodeBytesPerSecond = 4.75 * kGiga;
  cpu.interNodeLatencySeconds = 12e-6;
  cpu.ranksShareCompute = true;
  all.push_back(cpu);
  return all;
}

//===----------------------------------------------------------------------===//
// The TOML form: one table of every field
//===----------------------------------------------------------------------===//

/// How a field must be: rates and sizes strictly positive, fractions in
/// (0, 1], overheads and latencies non-negative, peaks that may be absent
/// (FP8 on an A100) non-negative.
enum class Range { Positive, Fraction, NonNegative, Any };

struct Field {
  const char *key;
  std::variant<double Hardware::*, int64_t Hardware::*, bool Hardware::*,
               std::string Hardware::*>
      member;
  Range range = Range::Any;
};

const Field kFields[] = {
    {"name", &Hardware::name},
    {"description", &Hardware::description},
    {"peak_flops_bf16", &Hardware::peakFlopsBF16, Range::NonNegative},
    {"peak_flops_fp8", &Hardware::peakFlopsFP8, Range::NonNegative},
    {"peak_flops_f32", &Hardware::peakFlopsF32, Range::Positive},
    {"gemm_efficiency", &Hardware::gemmEfficiency, Range::Fraction},
    {"gemm_half_flops", &Hardware::gemmHalfFlops, Range::NonNegative},
    {"attention_forward_efficiency", &Hardware::attentionForwardEfficiency,
     Range::Fraction},
    {"attention_backward_efficiency", &Hardware::attentionBackwardEfficiency,
     Range::Fraction},
    {"memory_bytes", &Hardware::memoryBytes, Range::Positive},
    {"memory_bytes_per_second", &Hardware::memoryBytesPerSecond,
     Range::Positive},
    {"memory_efficiency", &Hardware::memoryEfficiency, Range::Fraction},
    {"kernel_overhead_seconds", &Hardware::kernelOverheadSeconds,
     Range::NonNegative},
    {"devices_per_node", &Hardware::devicesPerNode, Range::Positive},
    {"intra_node_bus_bytes_per_second", &Hardware::intraNodeBusBytesPerSecond,
     Range::Positive},
    {"intra_node_latency_seconds", &Hardware::intraNodeLatencySeconds,
     Range::NonNegative},
    {"inter_node_bytes_per_second", &Hardware::interNodeBytesPerSecond,
     Range::Positive},
    {"inter_node_latency_seconds", &Hardware::interNodeLatencySeconds,
     Range::NonNegative},
    {"host_link_bytes_per_second", &Hardware::hostLinkBytesPerSecond,
     Range::NonNegative},
    {"host_memory_bytes_per_second", &Hardware::hostMemoryBytesPerSecond,
     Range::NonNegative},
    {"ranks_share_compute", &Hardware::ranksShareCompute},
};

std::string location(StringRef path, const toml::source_region &region) {
  return llvm::formatv("{0}:{1}:{2}", path, region.begin.line,
                       region.begin.column);
}

const char *rangeText(Range range) {
  switch (range) {
  case Range::Positive:
    return "must be positive";
  case Range::Fraction:
    return "must be in (0, 1]";
  case Range::NonNegative:
    return "must not be negative";
  case Range::Any:
    return "";
  }
  return "";
}

bool inRange(double v, Range range) {
  if (!std::isfinite(v))
    return false;
  switch (range) {
  case Range::Positive:
    return v > 0;
  case Range::Fraction:
    return v > 0 && v <= 1;
  case Range::NonNegative:
    return v >= 0;
  case Range::Any:
    return true;
  }
  return true;
}

/// A double as the shortest text that reads back to it, in TOML's float
/// form (a dot or an exponent).
std::string formatNumber(double v) {
  char buf[64];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof(buf), "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v)
      break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEni") == std::string::npos)
    s += ".0";
  return s;
}

/// A TOML basic string.
std::string quote(StringRef s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

} // namespace

llvm::ArrayRef<Hardware> titan::cost::builtinHardware() {
  static const std::vector<Hardware> all = buildBuiltins();
  return all;
}

const Hardware *titan::cost::lookupHardware(StringRef name) {
  for (const Hardware &hw : builtinHardware())
    if (hw.name == name)
      return &hw;
  return nullptr;
}

llvm::Expected<Hardware> titan::cost::loadHardwareFile(StringRef path) {
  auto fail = [](const llvm::Twine &msg) -> llvm::Error {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), msg.str());
  };
  if (!llvm::sys::fs::is_regular_file(path))
    return fail(
        "cannot read hardware file '" + path + "': " +
        (llvm::sys::fs::exists(path) ? "not a regular file" : "no such file"));
  toml::parse_result parsed = parseTomlFileChecked(path);
  if (!parsed) {
    const toml::parse_error &err = parsed.error();
    return fail(location(path, err.source()) +
                ": invalid TOML: " + std::string(err.description()));
  }
  const toml::table &root = parsed.table();
  std::vector<std::string> errors;
  const toml::table *table = nullptr;
  for (auto &&[name, node] : root) {
    if (name.str() == "hardware" && node.as_table()) {
      table = node.as_table();
      continue;
    }
    errors.push_back(location(path, name.source()) + ": unknown " +
                     (node.as_table() ? "section [" : "key '") +
                     std::string(name.str()) + (node.as_table() ? "]" : "'") +
                     " (a hardware file has one [hardware] table)");
  }
  if (!table && errors.empty())
    errors.push_back(path.str() + ": no [hardware] table");

  Hardware hw;
  bool haveName = false;
  if (table) {
    // The base first: the other keys override it whatever their order.
    if (const toml::node *base = table->get("base")) {
      std::optional<std::string_view> baseName =
          base->value<std::string_view>();
      const Hardware *found =
          baseName
              ? lookupHardware(StringRef(baseName->data(), baseName->size()))
              : nullptr;
      if (!baseName) {
        errors.push_back(location(path, base->source()) +
                         ": hardware.base must be a string");
      } else if (!found) {
        std::vector<std::string> names;
        for (const Hardware &b : builtinHardware())
          names.push_back(b.name);
        errors.push_back(location(path, base->source()) +
                         ": unknown hardware.base '" + std::string(*baseName) +
                         "' (one of " + llvm::join(names, ", ") + ")");
      } else {
        hw = *found;
      }
    }
    for (auto &&[name, node] : *table) {
      std::string key(name.str());
      if (key == "base")
        continue;
      std::string where = location(path, node.source());
      const Field *field =
          llvm::find_if(kFields, [&](const Field &f) { return key == f.key; });
      if (field == std::end(kFields)) {
        std::vector<std::string> keys;
        for (const Field &f : kFields)
          keys.push_back(f.key);
        errors.push_back(location(path, name.source()) +
                         ": unknown key 'hardware." + key + "' (keys: base, " +
                         llvm::join(keys, ", ") + ")");
        continue;
      }
      std::string bad;
      std::visit(
          [&](auto member) {
            using T = std::decay_t<decltype(hw.*member)>;
            if constexpr (std::is_same_v<T, std::string>) {
              if (auto v = node.template value<std::string_view>())
                hw.*member = std::string(*v);
              else
                bad = "must be a string";
            } else if constexpr (std::is_same_v<T, bool>) {
              if (auto v = node.template value<bool>())
                hw.*member = *v;
              else
                bad = "must be a boolean";
            } else if constexpr (std::is_same_v<T, int64_t>) {
              if (!node.is_integer())
                bad = "must be an integer";
              else if (int64_t v = *node.template value<int64_t>();
                       !inRange(double(v), field->range))
                bad = rangeText(field->range);
              else
                hw.*member = v;
            } else {
              // Integers are numbers too (memory_bytes = 85899345920).
              if (!node.is_number())
                bad = "must be a number";
              // toml++ gives no double for an integer it cannot represent
              // exactly (above 2^53).
              else if (std::optional<double> value =
                           node.template value<double>();
                       !value)
                bad = "is out of range";
              else if (double v = *value; !inRange(v, field->range))
                bad = std::string(rangeText(field->range)) + " (got " +
                      formatNumber(v) + ")";
              else
                hw.*member = v;
            }
          },
          field->member);
      if (!bad.empty())
        errors.push_back(where + ": hardware." + key + " " + bad);
      if (key == "name")
        haveName = true;
    }
  }
  if (errors.empty()) {
    // Whatever the base left must still hold (a file without a base sets
    // every rate itself).
    for (const Field &f : kFields) {
      auto *member = std::get_if<double Hardware::*>(&f.member);
      if (member && !inRange(hw.**member, f.range))
        errors.push_back(
            path.str() + ": hardware." + f.key + " " + rangeText(f.range) +
            " (got " + formatNumber(hw.**member) + "; set it or name a base)");
    }
    if (hw.peakFlopsBF16 <= 0 && hw.peakFlopsF32 <= 0)
      errors.push_back(path.str() + ": hardware needs peak_flops_bf16 or "
                                    "peak_flops_f32");
  }
  if (!errors.empty())
    return fail(llvm::join(errors, "\n"));
  if (!haveName)
    hw.name = llvm::sys::path::stem(path).str();
  return hw;
}

void titan::cost::printHardwareToml(const Hardware &hw, llvm::raw_ostream &os) {
  os << "[hardware]\n";
  for (const Field &f : kFields) {
    os << f.key << " = ";
    std::visit(
        [&](auto member) {
          using T = std::decay_t<decltype(hw.*member)>;
          if constexpr (std::is_same_v<T, std::string>)
            os << quote(hw.*member);
          else if constexpr (std::is_same_v<T, bool>)
            os << (hw.*member ? "true" : "false");
          else if constexpr (std::is_same_v<T, int64_t>)
            os << hw.*member;
          else
            os << formatNumber(hw.*member);
        },
        f.member);
    os << "\n";
  }
}
