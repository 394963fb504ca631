//===- ShardLayout.cpp - which block of a tensor each rank holds ----------===//

#include "ShardLayout.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace titanrt;

bool Box::empty() const {
  return llvm::any_of(size, [](int64_t s) { return s <= 0; });
}

int64_t Box::numel() const { return empty() ? 0 : titanrt::numel(size); }

std::vector<int64_t> titanrt::meshCoordinates(const std::vector<int64_t> &mesh,
                                              int64_t rank) {
  std::vector<int64_t> coords(mesh.size());
  for (int64_t a = int64_t(mesh.size()) - 1; a >= 0; --a) {
    coords[a] = rank % mesh[a];
    rank /= mesh[a];
  }
  return coords;
}

Box titanrt::shardBox(const Manifest::Param &p,
                      const std::vector<int64_t> &mesh,
                      const std::vector<int64_t> &coords) {
  Box box{std::vector<int64_t>(p.shape.size(), 0), p.shape};
  for (size_t d = 0; d < p.shape.size(); ++d) {
    const std::vector<MeshAxis> &axes = p.dimAxes[d];
    // The trailing storage axes (MeshAxes.h: FSDP's) are one group of
    // ceil-sized parts, as the compiler's #dist.sharding (isStorageAxis)
    // and its gathers treat them.
    size_t group = axes.size();
    while (group > 0 && titan::mesh::axisInfo(axes[group - 1]).storage)
      --group;
    int64_t n = p.shape[d];
    auto take = [&](int64_t parts, int64_t c) {
      int64_t rows = (n + parts - 1) / parts;
      box.start[d] += c * rows;
      n = std::clamp<int64_t>(n - c * rows, 0, rows);
    };
    for (size_t i = 0; i < group; ++i)
      take(mesh[axes[i]], coords[axes[i]]);
    int64_t parts = 1, c = 0;
    for (size_t i = group; i < axes.size(); ++i) {
      parts *= mesh[axes[i]];
      c = c * mesh[axes[i]] + coords[axes[i]];
    }
    take(parts, c);
    box.size[d] = n;
  }
  return box;
}

bool titanrt::writesShard(const Manifest::Param &p,
                          const std::vector<int64_t> &coords) {
  unsigned sharded = p.shardMask();
  for (unsigned a = 0; a < kNumAxes; ++a) {
    // A pipeline stage's parameter lives on its pipeline rank only.
    if (titan::mesh::axisInfo(MeshAxis(a)).pipeline && p.pipelineRank >= 0) {
      if (coords[a] != p.pipelineRank)
        return false;
      continue;
    }
    if (!(sharded & (1u << a)) && coords[a] != 0)
      return false;
  }
  return true;
}

Box titanrt::intersect(const Box &a, const Box &b) {
  Box r{a.start, a.size};
  for (size_t d = 0; d < a.start.size(); ++d) {
    int64_t lo = std::max(a.start[d], b.start[d]);
    int64_t hi = std::min(a.start[d] + a.size[d], b.start[d] + b.size[d]);
    r.start[d] = lo;
    r.size[d] = std::max<int64_t>(hi - lo, 0);
  }
  return r;
}

std::optional<std::pair<size_t, size_t>>
titanrt::findOverlap(const std::vector<Box> &boxes) {
  if (boxes.size() < 2)
    return std::nullopt;
  size_t rank = boxes[0].start.size();
  // The grid of every box edge, per dimension.
  std::vector<std::vector<int64_t>> edges(rank);
  for (const Box &b : boxes)
    for (size_t d = 0; d < rank; ++d) {
      edges[d].push_back(b.start[d]);
      edges[d].push_back(b.start[d] + b.size[d]);
    }
  int64_t cells = 1;
  constexpr int64_t kMaxCells = int64_t(1) << 24;
  for (std::vector<int64_t> &e : edges) {
    llvm::sort(e);
    e.erase(std::unique(e.begin(), e.end()), e.end());
    cells = std::min(cells * int64_t(e.size() - 1), kMaxCells + 1);
  }
  if (cells > kMaxCells) {
    // Not grid-like: pairwise.
    for (size_t i = 0; i < boxes.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (!intersect(boxes[i], boxes[j]).empty())
          return std::pair(j, i);
    return std::nullopt;
  }
  // Each cell remembers the box covering it (+1; 0: none).
  std::vector<uint32_t> owner(size_t(cells), 0);
  for (auto [i, b] : llvm::enumerate(boxes)) {
    std::vector<int64_t> lo(rank), hi(rank);
    for (size_t d = 0; d < rank; ++d) {
      lo[d] = std::lower_bound(edges[d].begin(), edges[d].end(), b.start[d]) -
              edges[d].begin();
      hi[d] = std::lower_bound(edges[d].begin(), edges[d].end(),
                               b.start[d] + b.size[d]) -
              edges[d].begin();
    }
    std::vector<int64_t> index = lo; // odometer over the box's cells
    while (true) {
      int64_t cell = 0;
      for (size_t d = 0; d < rank; ++d)
        cell = cell * int64_t(edges[d].size() - 1) + index[d];
      if (owner[cell])
        return std::pair(size_t(owner[cell] - 1), i);
      owner[cell] = uint32_t(i + 1);
      int64_t d = int64_t(rank) - 1;
      for (; d >= 0; --d) {
        if (++index[d] < hi[d])
          break;
        index[d] = lo[d];
      }
      if (d < 0)
        break;
    }
  }
  return std::nullopt;
}
