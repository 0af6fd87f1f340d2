#pragma once
// Text the policy reads, kept within a budget: a long text (a compiler log, a file) loses its
// middle, where the least useful part of a log usually is, and a marker says how much was cut.
#include <cstddef>
#include <string>

namespace kforge {

// `text` unchanged when it has at most max_chars characters (bytes); else its head and tail with
// "\n[... N characters cut ...]\n" between them, max_chars in all (never splitting a UTF-8
// sequence). max_chars is at least 64.
std::string trim_middle(const std::string& text, size_t max_chars);

}  // namespace kforge
