// cuda_driver.cc: runs recipestore_store over a whole grid on the CPU.
// Arguments: arena file, pool offset, rows file, loc file, capacity,
// valid count, slots. The arena file is rewritten with the result.
#include <stdio.h>
#include <stdlib.h>

#include <vector>

static std::vector<char> slurp(const char* path) {
  FILE* f = fopen(path, "rb");
  if (!f) exit(2);
  std::vector<char> b;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  fclose(f);
  return b;
}

int main(int argc, char** argv) {
  if (argc != 8) return 2;
  std::vector<char> arena = slurp(argv[1]), rows = slurp(argv[3]), loc = slurp(argv[4]);
  const long base = atol(argv[2]);
  const int capacity = atoi(argv[5]), valid = atoi(argv[6]);
  const long long slots = atoll(argv[7]);
  const unsigned threads = 128, blocks = (capacity + threads - 1) / threads;
  blockDim.x = threads;
  for (unsigned b = 0; b < blocks; b++) {
    for (unsigned t = 0; t < threads; t++) {
      blockIdx.x = b;
      threadIdx.x = t;
      recipestore_store(arena.data() + base, (const unsigned short*)rows.data(), (const rs_slot*)loc.data(), &valid,
                        capacity, slots);
    }
  }
  FILE* f = fopen(argv[1], "wb");
  if (!f || fwrite(arena.data(), 1, arena.size(), f) != arena.size()) return 3;
  fclose(f);
  return 0;
}
