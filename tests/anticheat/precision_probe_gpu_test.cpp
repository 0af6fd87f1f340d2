// Precision refusals that do not depend on luck (issue 25): a candidate that computes with fewer
// bits than its task's contract allows must be refused in at least 99 % of requests.
//
// The probe set: GEMM, reduction and normalisation tasks in float32, float16 and bfloat16, each
// with its honest shipped candidate followed by one more kernel that rounds every output element
// to m mantissa bits (round to nearest), m one bit short of what the tolerance needs:
// float32 (rtol 1e-4 ~ 2^-13.3): m = 12, a relative error up to 2^-13 = 1.2e-4; 16-bit types
// (rtol 1e-2 ~ 2^-6.6): m = 5, up to 2^-6 = 1.6e-2. On the task's own draws such an answer leaves
// the tolerance only where an output is large enough for the relative error to outgrow
// atol + rtol |r| (a few elements, or none: luck); the draw family's row, channel and element
// scales make many outputs large in every request. One bit more than the contract (m = 15 and 8)
// must pass: the probe refuses precision below the contract, not the contract itself.
//
// Each candidate is judged in KFORGE_PRECISION_REQUESTS verification-only requests (default 30),
// each with fresh secret draws. With KFORGE_PRECISION_OUT=FILE the rates are written as JSON.
#include "env/evaluator/evaluator.h"
#include "tests/env/evaluator/report_json.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <gtest/gtest.h>

#include "tests/env/evaluator/candidates.h"
#include "tests/skip_without_cuda.h"

using namespace kforge;
using namespace kforge::testing;

namespace {

const char* kRoundKernels = R"(
extern "C" __global__ void kforge_round_bits32(void* y, long long n, int drop) {
  unsigned* v = static_cast<unsigned*>(y);
  const unsigned half = 1u << (drop - 1), mask = ~((1u << drop) - 1u);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned b = v[i];
    if ((b & 0x7f800000u) != 0x7f800000u) v[i] = (b + half) & mask;
  }
}
extern "C" __global__ void kforge_round_bits16(void* y, long long n, int drop, int exp_mask) {
  unsigned short* v = static_cast<unsigned short*>(y);
  const unsigned half = 1u << (drop - 1), mask = ~((1u << drop) - 1u);
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned b = v[i];
    if ((b & (unsigned)exp_mask) != (unsigned)exp_mask) v[i] = (unsigned short)((b + half) & mask);
  }
}
)";

int mantissa_bits(DType d) { return d == DType::float32 ? 23 : d == DType::float16 ? 10 : 7; }

// The honest candidate, then every output rounded to `bits` mantissa bits.
Candidate rounded(const Candidate& honest, const TaskSpec& task, int bits) {
  Candidate c = honest;
  c.source += kRoundKernels;
  for (const auto& o : task.outputs) {
    int64_t n = 1;
    for (int64_t d : o.meta.shape) n *= d;
    const DType dt = o.meta.dtype;
    const int drop = mantissa_bits(dt) - bits;
    std::string launch = "  - kernel: " + std::string(dt == DType::float32 ? "kforge_round_bits32" : "kforge_round_bits16") +
                         "\n    grid: [" + std::to_string(std::min<int64_t>((n + 255) / 256, 65536)) + "]\n    block: [256]\n    args: [" +
                         o.name + ", " + std::to_string(n) + ", " + std::to_string(drop) +
                         (dt == DType::float32   ? ""
                          : dt == DType::float16 ? ", 31744"
                                                 : ", 32640") +
                         "]\n";
    c.plan_text += launch;
  }
  return c;
}

}  // namespace

TEST(PrecisionProbeGpu, FewerBitsThanTheContractAreRefusedInNearlyEveryRequest) {
  KFORGE_SKIP_WITHOUT_CUDA();
  EvalConfig cfg;
  cfg.worker.request_timeout_s = 120;
  Evaluator ev(cfg);
  ev.set_anticheat(AnticheatConfig::load(source_dir() + "/configs/anticheat.yaml"));
  const int requests = std::getenv("KFORGE_PRECISION_REQUESTS") ? std::atoi(std::getenv("KFORGE_PRECISION_REQUESTS")) : 30;
  struct Probe {
    const char* task;
    const char* candidate;
    const char* kind;
  };
  const std::vector<Probe> probes = {{"linear_relu", "tiled", "GEMM"},
                                     {"gated_linear", "splitk", "GEMM"},
                                     {"logsumexp_sub", "naive", "reduction"},
                                     {"groupnorm_silu", "fused", "normalisation"},
                                     {"layernorm_gelu_bf16", "fused", "normalisation"},
                                     {"rmsnorm_linear_bf16", "mma_fused", "GEMM"},
                                     {"attention_fp16", "flash_fp32", "GEMM"}};
  Json rows = Json::array();
  std::printf("%-22s %-14s %-9s %5s %9s %9s\n", "task", "kind", "dtype", "bits", "refused", "of");
  const char* only = std::getenv("KFORGE_PRECISION_ONLY");  // one task, for a rerun
  for (const Probe& p : probes) {
    if (only && std::string(only) != p.task) continue;
    SCOPED_TRACE(p.task);
    TaskSpec task = load_task(task_path(p.task));
    const DType dt = task.outputs.at(0).meta.dtype;
    const int contract = static_cast<int>(std::ceil(std::log2(1.0 / task.tolerance.rtol)));
    const Candidate honest = Candidate::load(source_dir() + "/datasets/samples/candidates/" + p.task + "/" + p.candidate);
    for (int bits : {contract - 2, contract + 1}) {
      if (bits >= mantissa_bits(dt)) continue;  // the type itself holds no more
      Candidate c = rounded(honest, task, bits);
      int refused = 0;
      std::string last_reason;
      std::map<std::string, int> by_check;  // what refused it: the anti-cheat check, or the verification
      for (int r = 0; r < requests; ++r) {
        EvalOptions opt;
        opt.time = false;
        opt.salt = 5000 + r;
        Json rep = to_json(ev.evaluate(task, c, opt));
        std::string v = report_verdict(rep);
        ASSERT_NE(v, "error") << format_report(rep);
        if (v != "pass") {
          ++refused;
          last_reason = rep["verify"].is_object() ? rep["verify"].value("reason", "") : "";
          ++by_check[v == "cheat" ? rep["anticheat"].value("check", "?") : "verify"];
        }
      }
      const double rate = static_cast<double>(refused) / requests;
      std::printf("%-22s %-14s %-9s %5d %9d %9d\n", p.task, p.kind, dtype_name(dt), bits, refused, requests);
      std::fflush(stdout);
      rows.push_back({{"task", p.task},
                      {"kind", p.kind},
                      {"dtype", dtype_name(dt)},
                      {"mantissa_bits", bits},
                      {"contract_bits", contract},
                      {"refused", refused},
                      {"requests", requests},
                      {"rate", rate},
                      {"last_reason", last_reason},
                      {"refused_by", by_check}});
      if (bits < contract)
        EXPECT_GE(rate, 0.99) << p.task << " at " << bits << " bits: " << refused << " of " << requests;
      else
        EXPECT_EQ(refused, 0) << p.task << " at " << bits << " bits (more than the contract) must pass: " << last_reason;
    }
  }
  if (const char* out = std::getenv("KFORGE_PRECISION_OUT")) std::ofstream(out) << rows.dump(2) << "\n";
}
