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
    int64_t n = p.shape[d];
    for (MeshAxis a : p.dimAxes[d]) {
      int64_t parts = mesh[a], c = coords[a];
      int64_t rows = (n + parts - 1) / parts;
      box.start[d] += c * rows;
      n = std::clamp<int64_t>(n - c * rows, 0, rows);
    }
    box.size[d] = n;
  }
  return box;
}

bool titanrt::writesShard(const Manifest::Param &p,
                          const std::vector<int64_t> &coords) {
  for (unsigned a = 0; a < kNumAxes; ++a)
    if (!(p.shardMask & (1u << a)) && coords[a] != 0)
      return false;
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
