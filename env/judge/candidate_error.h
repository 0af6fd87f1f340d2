#pragma once
// How the GPU worker's stages fail: a CandidateError carries the reply's error kind (worker_protocol.h)
// and whether the CUDA context is lost (fatal: the worker exits after replying). CUDA results are
// turned into one by cuda_check (cuda_check.h).
#include <stdexcept>
#include <string>

#include "env/process/worker_protocol.h"

namespace kforge {

struct CandidateError : std::runtime_error {
  std::string kind;
  bool fatal;
  CandidateError(std::string k, const std::string& msg, bool f) : std::runtime_error(msg), kind(std::move(k)), fatal(f) {}
};

}  // namespace kforge
