"""The slots of a step the generated-kernel tests run (step.mlir's
arguments, in order, each at a 256-byte boundary, as kernel-plan-memory
lays them out), and their bytes in an arena file (step-arena-harness.cpp
reads and writes whole arenas).

SLOTS lists (name, shape, dtype) in the step's argument order. A check.py
runs `main(sys.argv, inputs, compare)`.
"""
import torch

ALIGN = 256


def layout(slots):
    """{name: (offset, count, shape, dtype)} and the arena's size."""
    offsets, end = {}, 0
    for name, shape, dtype in slots:
        count = 1
        for d in shape:
            count *= d
        size = count * torch.tensor([], dtype=dtype).element_size()
        offsets[name] = (end, count, shape, dtype)
        end += (max(size, 1) + ALIGN - 1) // ALIGN * ALIGN
    return offsets, end


def at(arena, slots, name):
    """The slot `name` of `arena` (a bytearray) as a tensor viewing it."""
    offset, count, shape, dtype = layout(slots)[0][name]
    return torch.frombuffer(arena, dtype=dtype, count=count,
                            offset=offset).reshape(shape)


def write(path, slots, values):
    """An arena holding `values` ({name: tensor}, cast to each slot's
    dtype) in their slots, zeros elsewhere."""
    offsets, end = layout(slots)
    arena = bytearray(end)
    for name, v in values.items():
        offset, count, shape, dtype = offsets[name]
        data = v.to(dtype).contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
        arena[offset:offset + len(data)] = data
    with open(path, "wb") as f:
        f.write(arena)


def read(path):
    with open(path, "rb") as f:
        return bytearray(f.read())


def main(argv, inputs, compare):
    """`check.py inputs OUT` writes the step's slots (`inputs(path)`);
    `check.py compare ARENA` writes them again beside the arena, runs
    `compare(arena, fresh)` (whether every check holds) and prints PASS or
    FAIL. The exit status."""
    if argv[1] == "inputs":
        inputs(argv[2])
        return 0
    arena = read(argv[2])
    inputs(argv[2] + ".in")
    ok = compare(arena, read(argv[2] + ".in"))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
