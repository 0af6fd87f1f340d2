#pragma once
// The two kinds of candidate (../shared/DESIGN.md, Candidates): a device-only kernel with a launch
// plan (env/launch/KERNEL_FORMAT.md) or a PyTorch extension (env/extension/EXTENSION_FORMAT.md).
// Light, so that configs name a kind without the evaluator's header.
#include <string>

namespace kforge {

enum class CandidateKind { kernel, extension };
const char* candidate_kind_name(CandidateKind k);
// Throws a usage error for a name that is not a kind.
CandidateKind parse_candidate_kind(const std::string& name);

}  // namespace kforge
