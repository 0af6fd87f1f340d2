#include "env/episode/observation.h"

#include <algorithm>

namespace kforge {

namespace {

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string trim_middle(const std::string& text, size_t max_chars) {
  max_chars = std::max<size_t>(max_chars, 64);
  if (text.size() <= max_chars) return text;
  // The marker's length depends on the count it names; size it for the largest count possible.
  auto marker = [](size_t cut) { return "\n[... " + std::to_string(cut) + " characters cut ...]\n"; };
  size_t keep = max_chars - marker(text.size()).size();
  size_t head = keep - keep / 3;  // the head (what went wrong first) gets two thirds
  size_t tail_start = text.size() - keep / 3;
  while (head > 0 && continuation(text[head])) --head;
  while (tail_start < text.size() && continuation(text[tail_start])) ++tail_start;
  return text.substr(0, head) + marker(tail_start - head) + text.substr(tail_start);
}

}  // namespace kforge
