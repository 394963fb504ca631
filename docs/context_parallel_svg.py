#!/usr/bin/env python3
"""Draws docs/context-parallel.svg: context parallel as TorchTitan v0.2.0
defines it, for cp = 4 (the sequence cut into 8 chunks).

  python3 docs/context_parallel_svg.py [OUT.svg]   (default: next to this file)

Three panels:
  1. the load-balanced assignment: cp rank r holds chunks r and 2n-1-r, in
     that order, so every rank gets as many causal-attention blocks;
  2. the ring of the alltoall rotate method: at step s rank r holds the K/V
     of rank (r - s) mod n (and passes it on to rank r + 1 while it computes);
     each (q chunk, kv chunk) pair is full, causal-diagonal or skipped;
  3. the 8 x 8 chunk grid of the causal mask, each block colored by the rank
     that computes it and numbered with the ring step that does.

Standard library only; the output is deterministic (test/Docs checks that
the committed picture is this script's).
"""

import os
import sys

CP = 4
CHUNKS = 2 * CP
RANK_COLORS = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1"]
SKIPPED = "#eeeeee"
FONT = "font-family:sans-serif"


def own_chunks(rank):
    """The load-balanced chunks of `rank`, in its local order."""
    return [rank, CHUNKS - 1 - rank]


def owner(chunk):
    """The cp rank holding `chunk`."""
    return chunk if chunk < CP else CHUNKS - 1 - chunk


def kv_source(rank, step):
    """Whose K/V `rank` holds at ring step `step` (alltoall)."""
    return (rank - step) % CP


def block_kind(q, kv):
    """What the causal mask leaves of the (q chunk, kv chunk) block."""
    if kv < q:
        return "full"
    return "diagonal" if kv == q else "skipped"


class Svg:
    def __init__(self):
        self.items = []

    def rect(self, x, y, w, h, fill, stroke="#555555", dash=False):
        extra = ' stroke-dasharray="3,2"' if dash else ""
        self.items.append(
            f'<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="1"{extra}/>'
        )

    def polygon(self, points, fill):
        coords = " ".join(f"{x},{y}" for x, y in points)
        self.items.append(f'<polygon points="{coords}" fill="{fill}"/>')

    def text(self, x, y, s, size=12, anchor="start", color="#222222",
             bold=False):
        weight = ' font-weight="bold"' if bold else ""
        self.items.append(
            f'<text x="{x}" y="{y}" font-size="{size}" text-anchor="{anchor}" '
            f'fill="{color}" style="{FONT}"{weight}>{s}</text>'
        )

    def block(self, x, y, size, kind, color):
        """A (q chunk, kv chunk) block: filled when full, its lower-left
        triangle when causal-diagonal, grey when skipped."""
        if kind == "full":
            self.rect(x, y, size, size, color)
        elif kind == "diagonal":
            self.rect(x, y, size, size, "#ffffff")
            self.polygon([(x, y), (x, y + size), (x + size, y + size)], color)
            self.rect(x, y, size, size, "none")
        else:
            self.rect(x, y, size, size, SKIPPED, stroke="#bbbbbb", dash=True)

    def render(self, width, height):
        body = "\n".join(self.items)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}">\n'
            f'<rect width="{width}" height="{height}" fill="#ffffff"/>\n'
            f"{body}\n</svg>\n"
        )


def draw_assignment(svg, x0, y0):
    """Panel 1; returns its bottom."""
    svg.text(x0, y0, f"1. Load balancing: cp = {CP}, the sequence in "
             f"2 x cp = {CHUNKS} chunks; rank r holds chunks r and "
             f"{CHUNKS - 1} - r", 14, bold=True)
    w, h = 52, 26
    y = y0 + 16
    svg.text(x0, y + 18, "sequence")
    for c in range(CHUNKS):
        svg.rect(x0 + 90 + c * w, y, w, h, RANK_COLORS[owner(c)])
        svg.text(x0 + 90 + c * w + w / 2, y + 18, f"c{c}", anchor="middle",
                 color="#ffffff", bold=True)
    svg.text(x0 + 90 + CHUNKS * w + 10, y + 18,
             "tokens, labels and RoPE positions alike")
    y += h + 14
    for r in range(CP):
        svg.text(x0, y + 18, f"rank {r}")
        for i, c in enumerate(own_chunks(r)):
            svg.rect(x0 + 90 + i * w, y, w, h, RANK_COLORS[r])
            svg.text(x0 + 90 + i * w + w / 2, y + 18, f"c{c}",
                     anchor="middle", color="#ffffff", bold=True)
        work = sum(block_kind(q, kv) != "skipped"
                   for q in own_chunks(r) for kv in range(CHUNKS))
        svg.text(x0 + 90 + 2 * w + 10, y + 18,
                 f"local sequence [c{r} | c{CHUNKS - 1 - r}]: "
                 f"{work} causal blocks to compute")
        y += h + 6
    return y


def draw_ring(svg, x0, y0):
    """Panel 2; returns its bottom."""
    svg.text(x0, y0, "2. Ring attention, rotate method alltoall: at step s "
             f"rank r holds the K/V of rank (r - s) mod {CP}", 14, bold=True)
    svg.text(x0, y0 + 18, "each cell: rows = the rank's q chunks, columns = "
             "the K/V chunks it holds, which it sends on to rank r + 1 while "
             "it computes;", 12)
    svg.text(x0, y0 + 34, "the online softmax merges each step's blocks "
             "through their log-sum-exp", 12)
    cell, size = 190, 24
    top = y0 + 60
    for s in range(CP):
        svg.text(x0 + 70 + s * cell + size, top, f"step {s}", bold=True)
    for r in range(CP):
        y = top + 14 + r * (2 * size + 34)
        svg.text(x0, y + size + 4, f"rank {r}")
        for s in range(CP):
            src = kv_source(r, s)
            x = x0 + 70 + s * cell
            kvs = own_chunks(src)
            for j, kv in enumerate(kvs):
                svg.text(x + 22 + j * size + size / 2, y + 10, f"c{kv}",
                         10, anchor="middle")
            for i, q in enumerate(own_chunks(r)):
                svg.text(x + 18, y + 14 + i * size + size / 2 + 4, f"c{q}", 10,
                         anchor="end")
                for j, kv in enumerate(kvs):
                    svg.block(x + 22 + j * size, y + 14 + i * size, size,
                              block_kind(q, kv), RANK_COLORS[r])
            svg.text(x + 22 + 2 * size + 8, y + 14 + size + 4,
                     f"K/V of rank {src}", 11, color=RANK_COLORS[src],
                     bold=True)
    return top + 14 + CP * (2 * size + 34)


def draw_mask(svg, x0, y0):
    """Panel 3; returns its bottom."""
    svg.text(x0, y0, f"3. The causal mask over {CHUNKS} x {CHUNKS} chunks: "
             "the rank computing each block, and at which ring step", 14,
             bold=True)
    size = 34
    top, left = y0 + 34, x0 + 90
    svg.text(left + CHUNKS * size / 2, top - 14, "K/V chunk", anchor="middle")
    svg.text(x0, top + CHUNKS * size / 2, "q chunk")
    for c in range(CHUNKS):
        svg.text(left + c * size + size / 2, top - 2, f"c{c}", 10,
                 anchor="middle")
        svg.text(left - 4, top + c * size + size / 2 + 4, f"c{c}", 10,
                 anchor="end")
    for q in range(CHUNKS):
        rank = owner(q)
        for kv in range(CHUNKS):
            x, y = left + kv * size, top + q * size
            kind = block_kind(q, kv)
            svg.block(x, y, size, kind, RANK_COLORS[rank])
            if kind != "skipped":
                step = (rank - owner(kv)) % CP
                tx, ty = (x + size / 2, y + size / 2 + 4) if kind == "full" \
                    else (x + size / 3, y + 2 * size / 3 + 4)
                svg.text(tx, ty, str(step), 11, anchor="middle",
                         color="#ffffff", bold=True)
    # Legend.
    lx = left + CHUNKS * size + 30
    ly = top
    for r in range(CP):
        svg.rect(lx, ly + r * 24, 18, 18, RANK_COLORS[r])
        svg.text(lx + 26, ly + r * 24 + 14, f"rank {r}")
    ly += CP * 24 + 16
    for kind, label in [("full", "full block"),
                        ("diagonal", "causal-diagonal block (masked inside)"),
                        ("skipped", "excluded by the mask: skipped, "
                                    "not computed")]:
        svg.block(lx, ly, 18, kind, "#777777")
        svg.text(lx + 26, ly + 14, label)
        ly += 24
    ly += 10
    for line in [
        "the number in a block: the ring step (alltoall) at which its",
        "rank holds that K/V chunk; allgather computes the same blocks",
        "after one all-gather of K/V",
        f"every rank: {CHUNKS + 1} blocks, 2 of them diagonal",
    ]:
        svg.text(lx, ly + 12, line, 12)
        ly += 18
    return top + CHUNKS * size


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "context-parallel.svg")
    svg = Svg()
    svg.text(20, 30, "Context parallel (TorchTitan v0.2.0, load-balanced), "
             f"cp = {CP}", 18, bold=True)
    y = draw_assignment(svg, 20, 62)
    y = draw_ring(svg, 20, y + 30)
    y = draw_mask(svg, 20, y + 20)
    with open(out, "w") as f:
        f.write(svg.render(940, int(y) + 30))


if __name__ == "__main__":
    main()
