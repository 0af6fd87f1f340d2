#pragma once
// A kernel source as the compiler's front end first sees it. The one lexer of CUDA source
// (cuda_lexer.h), which every scan of candidate source reads (the compiler's include guard, the
// kernel signature reader, the static anti-cheat checks), lexes this text, so that they agree,
// character for character, on what a line is: a scan that splices differently from NVRTC could
// be shown one text while the compiler reads another.
#include <string>
#include <vector>

namespace kforge {

// Translation phase 2 as NVRTC's front end does it: a backslash immediately followed by a newline
// ("\\\n" or "\\\r\n") joins two lines. A backslash followed by spaces is not a continuation there,
// so it is not one here either. Every character keeps the 1-based line it came from.
struct SplicedText {
  std::string chars;
  std::vector<int> lines;
};

SplicedText splice_lines(const std::string& source);

}  // namespace kforge
