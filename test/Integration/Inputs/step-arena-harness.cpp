// Runs a compiled step (the generated-kernel tests' step.mlir, linked in)
// on an arena whose first bytes (its slots, as arena_slots.py lays them
// out) are read from argv[1], and writes the whole arena to argv[2].
#include <cstdint>
#include <cstdio>
#include <vector>

extern "C" void titan_step(void *arena);

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  std::vector<unsigned char> arena(4u << 20);
  FILE *in = std::fopen(argv[1], "rb");
  if (!in)
    return 1;
  size_t read = std::fread(arena.data(), 1, arena.size(), in);
  std::fclose(in);
  if (read == 0)
    return 1;
  titan_step(arena.data());
  FILE *out = std::fopen(argv[2], "wb");
  if (!out || std::fwrite(arena.data(), 1, arena.size(), out) != arena.size())
    return 1;
  std::fclose(out);
  return 0;
}
