#pragma once
// The verification's own device work, fused: one read of a candidate output and the reference's
// output gives the mismatch count, the unwritten (poison) count and the largest absolute and
// relative errors; one read of an input gives its keyed fingerprint (so "inputs unchanged" needs
// no clone of the inputs and no second comparison pass).
//
// Like the draw kernel (draw_kernel.h) the element code is written once and compiled twice: by
// NVRTC for the device and by the host compiler into compare_like_device() and
// fingerprint_like_device(), which the CPU tests check against plain definitions of the rules.
//
// The comparison rule, per element, in double precision: the tolerance rule of
// data_synth/reference/tolerance.h (the task's contract; kf_outside_tolerance is its device text, held equal
// to the tensor one by tests/env/judge/tolerance_agreement_test.cpp), and the poison:
//   both finite:      bad if |c - r| > atol + rtol * |r|
//   otherwise:        bad unless c == r (the same infinity) or both are NaN
//   float dtypes:     bad if c has the trial's poison bits (never written), even where r is NaN
// unwritten counts elements with the poison bits; max_abs / max_rel are over elements where both
// values are finite (max_rel where r != 0). Arithmetic is IEEE round-to-nearest without
// contraction, so the result equals libtorch's double-precision evaluation of the same rule.
//
// The fingerprint of a byte buffer under a key is the sum (mod 2^64) over its 8-byte words (and
// tail bytes) of mix64((word ^ key) + (index + 1) * golden): position-dependent (a swap changes
// it) and, with a key drawn per request that the candidate never sees, not forgeable by a kernel
// that alters its inputs.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda.h>

#include "data_synth/task/dtype.h"
#include "env/judge/harness_nvrtc.h"

namespace kforge {

struct CompareStats {
  uint64_t mismatches = 0;
  uint64_t unwritten = 0;
  double max_abs = 0;
  double max_rel = 0;
  // From the 4 words a compare() wrote (counts, then the two maxima as IEEE bits).
  static CompareStats from_words(const uint64_t words[4]);
};

class DeviceChecker {
 public:
  // Words per compare() result and per fingerprint() result.
  static constexpr int kCompareWords = 4;
  static constexpr int kFingerprintWords = 1;

  static std::string source();
  static std::vector<char> compile(const std::string& arch);
  // The text of kf_fp_term (word, index, key): one term of the fingerprint's sum, for another
  // module's source that fingerprints what it writes (it needs kf_u64, KF_FN and kf_mix64).
  static std::string fingerprint_term_source();

  explicit DeviceChecker(const std::string& arch = "sm_90a");

  // Enqueues on `stream` the comparison of n elements of `dtype` at cand and ref (contiguous),
  // accumulating into the kCompareWords 64-bit words at `out` (device memory the caller zeroed).
  void compare(DType dtype, CUdeviceptr cand, CUdeviceptr ref, int64_t n, double atol, double rtol, uint64_t poison_bits, CUdeviceptr out,
               CUstream stream);
  // Enqueues the fingerprint of nbytes at data (8-byte aligned) into the word at `out` (zeroed).
  void fingerprint(CUdeviceptr data, int64_t nbytes, uint64_t key, CUdeviceptr out, CUstream stream);
  // Enqueues the copy of nbytes from src to dst (8-byte aligned, not overlapping) with the fingerprint
  // of what was copied into the word at `out` (zeroed): one read where fingerprint and copy are two.
  void fingerprint_copy(CUdeviceptr src, CUdeviceptr dst, int64_t nbytes, uint64_t key, CUdeviceptr out, CUstream stream);

 private:
  static unsigned grid_for(const HarnessModule::Loaded& l, int64_t items);
  // kforge_fingerprint of nbytes at data, copying them to copy_to unless it is 0.
  void launch_fingerprint(CUdeviceptr data, CUdeviceptr copy_to, int64_t nbytes, uint64_t key, CUdeviceptr out, CUstream stream);

  HarnessModule module_;  // functions: kforge_compare, kforge_fingerprint (with or without a copy)
};

// The kernels' element code compiled for the host, single-threaded (for tests). `cand` and `ref`
// hold n elements of dtype.
CompareStats compare_like_device(DType dtype, const void* cand, const void* ref, int64_t n, double atol, double rtol, uint64_t poison_bits);
uint64_t fingerprint_like_device(const void* data, int64_t nbytes, uint64_t key);

// The poison written into output buffers before a trial: NaN with a payload that varies by trial
// for float dtypes, a trial-dependent sentinel for integers, an invalid byte for bool. Varying it
// means an element left unwritten cannot match the reference in every trial by accident.
uint64_t poison_bits_for_trial(DType dtype, uint64_t trial);

}  // namespace kforge
