#pragma once
// A kernel source as the compiler's front end first sees it. Shared by every scan of candidate
// source (the compiler's include guard, the static anti-cheat checks) so they agree, character for
// character, on what a line and a comment are: a scan that splices differently from NVRTC could
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

// At chars[i] == '/': skips a comment (`//` up to, not including, its newline; `/* */`) and
// returns true; otherwise leaves i and returns false.
bool skip_comment(const std::string& chars, size_t& i);

}  // namespace kforge
