#pragma once
// The one lexer of CUDA source: the preprocessing tokens (translation phase 3) of a text spliced
// by splice_lines (source_text.h). Every scan of candidate source reads these tokens: the static
// anti-cheat checks (which expand macros on them), the compiler's include guard and the kernel
// signature reader, so that all three agree with one another, and with NVRTC, on what a token, a
// comment, a literal and a directive are.
//
// What it reads:
//   - identifiers: letters, digits, `_`, `$`, bytes >= 0x80, and universal character names
//     (\u0063lock reads "clock");
//   - pp-numbers: a digit (or `.` and a digit) followed by identifier characters, `.`, digit
//     separators (1'000) and signs after e, E, p, P (1.e+5f, 0x1p-3);
//   - string and character literals with their prefixes (L, u8, u, U), to the closing quote or the
//     end of the line; raw strings (R, LR, u8R, uR, UR) with a delimiter of at most 16 characters,
//     to the matching )delim"; a raw string with a malformed delimiter is the identifier R (or
//     u8R...) followed by an ordinary string literal;
//   - punctuators, longest first, digraphs read as what they stand for (`<%` is "{", `%:` is
//     "#"), and `<::` read as `<` `::` unless a `:` or `>` follows it;
//   - header names (<cub/cub.cuh>) after #include, #include_next, #import, #embed and after
//     `__has_include(` / `__has_include_next(`, to the `>` on the same line;
//   - comments as white space: a comment neither starts nor ends a line, so `/* a */ #define`
//     is a directive and a directive goes on past a block comment to the newline after it;
//   - a directive: a `#` (or `%:`, but not `%:%:`) that is the first token of a line, and the
//     tokens after it up to the next line's first token. Literals in a directive end with its
//     line.
// Nothing is expanded or evaluated: that is the job of whoever reads the tokens.
#include <cstddef>
#include <string>
#include <vector>

#include "env/cuda_source/source_text.h"

namespace kforge {

enum class TokenKind {
  identifier,
  number,
  string,     // string literal, raw or not
  character,  // character literal
  punctuator,
  header_name,  // <name> after #include or __has_include(
  other,        // a character that makes no token (a control character, a stray backslash)
};

struct CudaToken {
  TokenKind kind = TokenKind::punctuator;
  // The spelling. Identifiers: universal character names decoded to UTF-8. Punctuators: digraphs
  // as what they stand for. Literals and header names: as written, prefix and quotes included.
  std::string text;
  // String and character literals: the content, escapes decoded (raw strings: as written).
  // Header names: the name between < and >.
  std::string value;
  std::vector<int> value_lines;  // the 1-based line of each byte of `value`
  int line = 0;                  // 1-based line of the token's first character
  size_t begin = 0, end = 0;     // the token's characters in SplicedText::chars: [begin, end)
  bool space_before = false;     // white space, a comment or a newline before it
  bool line_start = false;       // the first token of its line
  bool directive = false;        // part of a directive (its `#` is the token with line_start)
  bool unterminated = false;     // a literal without its closing quote or raw-string delimiter

  // An identifier or punctuator spelled `spelling`.
  bool is(const char* spelling) const;
};

struct LexedSource {
  std::vector<CudaToken> tokens;
  int unterminated_comment_line = 0;  // the line of a /* that is never closed; 0 when none
};

LexedSource lex_cuda(const SplicedText& text);
LexedSource lex_cuda(const std::string& source);  // splice_lines, then lex_cuda

// The tokens of text that is not a source file (the spelling a ## paste made): only white space
// separates them; no comments, no directives, no line numbers (all 0).
std::vector<CudaToken> lex_cuda_fragment(const std::string& text);

}  // namespace kforge
