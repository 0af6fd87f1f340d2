#include "env/cuda_source/source_text.h"

namespace kforge {

SplicedText splice_lines(const std::string& source) {
  SplicedText t;
  t.chars.reserve(source.size());
  t.lines.reserve(source.size());
  int line = 1;
  for (size_t i = 0; i < source.size(); ++i) {
    char c = source[i];
    if (c == '\\' && i + 1 < source.size() && source[i + 1] == '\n') {
      ++line;
      ++i;
      continue;
    }
    if (c == '\\' && i + 2 < source.size() && source[i + 1] == '\r' && source[i + 2] == '\n') {
      ++line;
      i += 2;
      continue;
    }
    t.chars.push_back(c);
    t.lines.push_back(line);
    if (c == '\n') ++line;
  }
  return t;
}

}  // namespace kforge
