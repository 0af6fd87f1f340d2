// A compile that never ends (for the supervisor's compile time limit; NOT in the benchmark's default
// set). Tree<N, M> recurses twice per level with distinct template arguments, so nothing is
// memoised: Tree<48, 0> asks the front end for 2^49 instantiations. The recursion is only 48 deep,
// far below the front end's depth limit, so no error stops it early.
//
// Seen with NVRTC 13.0 (CUDA 13.0.88) on the 2-core development machine, `timeout 20`: still
// compiling after 20 s, resident memory 5.3 GB and growing ~0.27 GB/s. Under a 3 GB address-space
// limit (ulimit -v) NVRTC gives up after ~6 s with "catastrophic error: out of memory" (a compile
// error, not a crash); under the compile worker's 16 GiB limit the 30 s compile timeout fires first.
// NVRTC's cancellation callback (nvrtcSetFlowCallback) is not a substitute: it is polled rarely
// (never during long optimiser passes), so only killing the worker bounds a compile.
template <int N, unsigned long long M> struct Tree {
  static constexpr unsigned long long value = Tree<N - 1, 2 * M>::value + Tree<N - 1, 2 * M + 1>::value;
};
template <unsigned long long M> struct Tree<0, M> {
  static constexpr unsigned long long value = M;
};

extern "C" __global__ void never_ends(unsigned long long* y) { y[0] = Tree<48, 0>::value; }
