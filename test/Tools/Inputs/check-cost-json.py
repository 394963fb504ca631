"""Checks titan-compile --emit=cost --cost-format=json: the agreed keys and
their internal consistency (the parts and the kernels add up to the
microbatch's compute and units). Usage: check-cost-json.py FILE [key=value]...
where the options say what to expect: pp_ranks=N (peak_bytes entries),
bubble=positive|zero, axes=a+b (exposed_comm_seconds has these groups)."""
import json
import math
import sys

p = json.load(open(sys.argv[1]))
want = dict(a.split("=", 1) for a in sys.argv[2:])

for key in ["hardware", "gpus", "mesh", "step_seconds",
            "tokens_per_second_per_device", "mfu", "exposed_comm_seconds",
            "bubble", "peak_bytes", "units", "kernels", "parts"]:
    assert key in p, "missing key " + key
assert sorted(p["mesh"]) == sorted(["pp", "dp_replicate", "dp_shard", "cp",
                                    "tp"]), p["mesh"]
m = p["mesh"]
world = m["pp"] * m["dp_replicate"] * m["dp_shard"] * m["cp"] * m["tp"]
assert p["gpus"] == world, (p["gpus"], world)
assert p["step_seconds"] > 0

def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel, abs_tol=1e-15)

# tokens/s per device = the global batch's tokens / step / world size.
tps = p["tokens_per_step"] / p["step_seconds"] / world
assert close(p["tokens_per_second_per_device"], tps), (
    p["tokens_per_second_per_device"], tps)
# MFU = FLOPs per token x tokens/s per device / the device's peak.
mfu = p["flops_per_token"] * p["tokens_per_second_per_device"] / p["peak_flops"]
assert close(p["mfu"], mfu), (p["mfu"], mfu)
assert 0 < p["mfu"] < 1, p["mfu"]

assert sorted(p["units"]) == sorted(["gemm", "attention_forward",
                                     "attention_backward", "memory"])
for name, u in p["units"].items():
    assert sorted(u) == sorted(["calls", "flops", "bytes", "seconds"]), u
assert p["units"]["gemm"]["calls"] > 0 and p["units"]["gemm"]["flops"] > 0

for part in p["parts"]:
    assert sorted(part) == sorted(["name", "compute_seconds", "comm_seconds",
                                   "exposed_comm_seconds", "flops", "calls"])
    assert part["compute_seconds"] >= 0 and part["calls"] >= 0
assert p["parts"][-1]["name"] == "optimizer"
names = [q["name"] for q in p["parts"]]
assert len(names) == len(set(names)), names
if m["pp"] == 1:
    # The parts of one microbatch's forward and backward add up to its
    # compute (up to rounding), and so do the units.
    parts = sum(q["compute_seconds"] for q in p["parts"][:-1])
    assert close(parts, p["microbatch_compute_seconds"], 1e-6), (
        parts, p["microbatch_compute_seconds"])
    units = sum(u["seconds"] for u in p["units"].values())
    assert close(units, p["microbatch_compute_seconds"], 1e-6), (
        units, p["microbatch_compute_seconds"])
    # The step is at least every microbatch's compute.
    assert p["step_seconds"] >= p["accumulation_steps"] * p[
        "microbatch_compute_seconds"] * (1 - 1e-9)

# The kernels: longest first, each name once; per roofline class they add
# up to the units (the same calls, counted by kernel).
for k in p["kernels"]:
    assert sorted(k) == sorted(["name", "unit", "calls", "flops", "bytes",
                                "seconds"]), k
    assert k["unit"] in p["units"] and k["calls"] > 0, k
seconds = [k["seconds"] for k in p["kernels"]]
assert seconds == sorted(seconds, reverse=True), seconds
kernel_names = [k["name"] for k in p["kernels"]]
assert len(kernel_names) == len(set(kernel_names)), kernel_names
for name, u in p["units"].items():
    of = [k for k in p["kernels"] if k["unit"] == name]
    assert sum(k["calls"] for k in of) == u["calls"], (name, u)
    for key in ["flops", "bytes", "seconds"]:
        assert close(sum(k[key] for k in of), u[key], 1e-6), (name, key, u)

assert len(p["peak_bytes"]) == int(want.get("pp_ranks", "1")), p["peak_bytes"]
assert all(b > 0 for b in p["peak_bytes"])
if want.get("bubble") == "positive":
    assert 0 < p["bubble"] < 1, p["bubble"]
else:
    assert p["bubble"] == 0, p["bubble"]
for axes in filter(None, want.get("axes", "").split("+")):
    assert axes in p["exposed_comm_seconds"], p["exposed_comm_seconds"]
for axes, s in p["exposed_comm_seconds"].items():
    assert 0 <= s <= p["step_seconds"], (axes, s)
print("ok", p["hardware"], "gpus", world, "parts", len(p["parts"]))
