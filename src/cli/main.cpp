#include <cstdio>

int main(int argc, char** argv) {
  std::puts("strata: not yet");
  return 0;
}
