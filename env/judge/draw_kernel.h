#pragma once
// Task-argument draws on the device, byte-identical to data_synth's fill_draw on the CPU.
//
// A trial of a large task fills up to ~1e9 elements; the CPU cannot do that per verification
// trial, so the GPU worker draws on the device. The kernel is CUDA C++ compiled at run time by
// NVRTC (the build has no nvcc step) and loaded with the driver API. Its element code is written
// once and compiled twice: by NVRTC for the device and by the host compiler into
// fill_draw_like_device(), so the CPU tests check the very code the GPU runs against fill_draw.
//
// Bit-exactness rests on: integer hashing (exact everywhere); every double operation of draw.cpp
// done as one IEEE round-to-nearest operation (__dmul_rn/__dadd_rn/__dsub_rn, --fmad=false, no
// contraction); constants that need sqrt or division passed from the host as exact doubles;
// double->float by __double2float_rn; float->bfloat16/half with draw.cpp's own bit manipulations
// (the half subnormal path adds 0.5f with __fadd_rn and --ftz=false, as the CPU's SSE add does).
//
// The driver API is reached through the CUDA runtime's entry-point query, not by linking
// libcuda: a binary that links libcuda.so.1 cannot even start on a machine without a driver, and
// the CPU test of this library must run there.
#include <cstdint>
#include <string>
#include <vector>

#include <cuda.h>

#include "data_synth/task/draw.h"
#include "data_synth/task/draw_member.h"
#include "env/judge/harness_nvrtc.h"

namespace kforge {

class DeviceDrawer {
 public:
  // The complete CUDA C++ source NVRTC compiles (no #include; one extern "C" kernel per dtype).
  static std::string source();
  // NVRTC compilation of source() to a CUBIN for a real architecture ("sm_90a", "sm_80").
  // Needs no GPU. Throws a runtime error with the compiler's log.
  static std::vector<char> compile(const std::string& arch);
  // The kernel that writes `dtype` ("kforge_draw_float32", ...).
  static const char* kernel_name(DType dtype);

  // Compiles at once (no GPU needed); the module is loaded on first fill() in each context.
  explicit DeviceDrawer(const std::string& arch = "sm_90a");

  // Enqueues on `cu_stream` (in the calling thread's current CUDA context) the fill of numel
  // elements of dtype at `out` with the bytes fill_draw(draw, dtype, stream_key, numel, .) writes.
  // Asynchronous: synchronise the stream before reading. Validates the draw as fill_draw does
  // (spec error); CUDA failures are runtime errors.
  // With `member` (kind other than 0) each drawn value is moved by that member of the draw family
  // in the same pass (data_synth/task/draw_member.h): the bytes apply_member_elements gives after
  // fill_draw.
  // With `fp_out` (8-byte aligned, as `out` must then be) the fingerprint under `fp_key` of the
  // bytes written is added to the word there in the same pass: the value DeviceChecker::fingerprint
  // gives for them (check_kernel.h), without reading them again.
  void fill(const Draw& draw, DType dtype, uint64_t stream_key, int64_t numel, CUdeviceptr out, CUstream cu_stream,
            const MemberParams& member = {}, uint64_t fp_key = 0, CUdeviceptr fp_out = 0);
  // Enqueues `member` applied in place to numel elements of dtype (a float dtype) at `data`.
  void apply_member(const MemberParams& member, DType dtype, int64_t numel, CUdeviceptr data, CUstream cu_stream);

  const std::string& arch() const { return module_.arch(); }
  size_t cubin_bytes() const { return module_.cubin_bytes(); }

 private:
  static void check_member(const MemberParams& member, DType dtype);
  HarnessModule module_;  // one draw kernel per dtype in dtype_slot order, then the float dtypes' member kernels
};

// The kernel's element code compiled for the host: writes what DeviceDrawer::fill writes, on the
// CPU, single-threaded. For tests (it must equal fill_draw byte for byte).
void fill_draw_like_device(const Draw& draw, DType dtype, uint64_t stream_key, int64_t numel, void* out, const MemberParams& member = {});

}  // namespace kforge
