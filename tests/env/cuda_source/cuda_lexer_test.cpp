#include "env/cuda_source/cuda_lexer.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

using namespace kforge;

namespace {

std::vector<CudaToken> lex(const std::string& source) { return lex_cuda(source).tokens; }

// "kind:text" of every token, space-separated (i identifier, n number, s string, c character,
// p punctuator, h header name, o other).
std::string kinds(const std::vector<CudaToken>& toks) {
  std::string out;
  for (const CudaToken& t : toks) {
    const char* k = "?";
    switch (t.kind) {
      case TokenKind::identifier:
        k = "i";
        break;
      case TokenKind::number:
        k = "n";
        break;
      case TokenKind::string:
        k = "s";
        break;
      case TokenKind::character:
        k = "c";
        break;
      case TokenKind::punctuator:
        k = "p";
        break;
      case TokenKind::header_name:
        k = "h";
        break;
      case TokenKind::other:
        k = "o";
        break;
    }
    if (!out.empty()) out += ' ';
    out += std::string(k) + ":" + t.text;
  }
  return out;
}

std::string kinds(const std::string& source) { return kinds(lex(source)); }

std::vector<int> lines(const std::vector<CudaToken>& toks) {
  std::vector<int> out;
  for (const CudaToken& t : toks) out.push_back(t.line);
  return out;
}

}  // namespace

TEST(CudaLexer, RawStringsEndAtTheirOwnDelimiter) {
  std::vector<CudaToken> t = lex("R\"xy(a)\" b)x\" c)xy\" next");
  ASSERT_EQ(t.size(), 2u) << kinds(t);
  EXPECT_EQ(t[0].kind, TokenKind::string);
  EXPECT_EQ(t[0].value, "a)\" b)x\" c");
  EXPECT_EQ(t[0].text, "R\"xy(a)\" b)x\" c)xy\"");
  EXPECT_FALSE(t[0].unterminated);
  EXPECT_EQ(kinds({t[1]}), "i:next");
  // An empty delimiter, and a delimiter that ends at the first match.
  EXPECT_EQ(lex("R\"()\"")[0].value, "");
  EXPECT_EQ(kinds("LR\"(x)\" uR\"(y)\" UR\"(z)\""), "s:LR\"(x)\" s:uR\"(y)\" s:UR\"(z)\"");
}

TEST(CudaLexer, RawStringWithAMalformedDelimiterIsAnIdentifierAndAString) {
  // A space may not be part of a delimiter: R is a name, then an ordinary literal follows.
  EXPECT_EQ(kinds("R\"a b(x)a b\""), "i:R s:\"a b(x)a b\"");
  // Sixteen characters make a delimiter; seventeen are too many.
  EXPECT_EQ(kinds("R\"abcdefghijklmnop(x)abcdefghijklmnop\""), "s:R\"abcdefghijklmnop(x)abcdefghijklmnop\"");
  EXPECT_EQ(kinds("R\"abcdefghijklmnopq(x)abcdefghijklmnopq\""), "i:R s:\"abcdefghijklmnopq(x)abcdefghijklmnopq\"");
}

TEST(CudaLexer, Utf8RawStringSpansLinesAndKeepsItsLines) {
  std::vector<CudaToken> t = lex("a u8R\"x(one\n#include \"no.h\"\n)x\" b\nc");
  ASSERT_EQ(kinds(t), "i:a s:u8R\"x(one\n#include \"no.h\"\n)x\" i:b i:c");
  EXPECT_EQ(t[1].value, "one\n#include \"no.h\"\n");
  ASSERT_EQ(t[1].value_lines.size(), t[1].value.size());
  EXPECT_EQ(t[1].value_lines.front(), 1);
  EXPECT_EQ(t[1].value_lines.back(), 2);  // the newline that ends line 2
  EXPECT_EQ(lines(t), (std::vector<int>{1, 1, 3, 4}));
  EXPECT_FALSE(t[2].directive);  // the #include inside the literal is no directive
  EXPECT_TRUE(t[3].line_start);
}

TEST(CudaLexer, LessColonColonIsLessThenScopeUnlessColonOrGreaterFollows) {
  EXPECT_EQ(kinds("a<::b>"), "i:a p:< p::: i:b p:>");
  EXPECT_EQ(kinds("a<:::b"), "i:a p:[ p::: i:b");
  EXPECT_EQ(kinds("a<::>c"), "i:a p:[ p:] i:c");
  EXPECT_EQ(kinds("a<:1:>"), "i:a p:[ n:1 p:]");
  EXPECT_EQ(kinds("<% %> %: %:%: x->*y <=> z"), "p:{ p:} p:# p:## i:x p:->* i:y p:<=> i:z");
}

TEST(CudaLexer, SplicesJoinTokensAndContinueComments) {
  std::vector<CudaToken> t = lex("clo\\\nck64(); // note \\\n still the note\nx /* a \\\n b */ y");
  EXPECT_EQ(kinds(t), "i:clock64 p:( p:) p:; i:x i:y");
  EXPECT_EQ(lines(t), (std::vector<int>{1, 2, 2, 2, 4, 5}));
  EXPECT_TRUE(t[4].line_start);
  EXPECT_FALSE(t[5].line_start);
  EXPECT_TRUE(t[5].space_before);  // the comment is a space
  // A splice with \r\n, and one inside a string literal.
  std::vector<CudaToken> s = lex("\"ab\\\r\ncd\" e");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].value, "abcd");
  EXPECT_EQ(s[0].value_lines, (std::vector<int>{1, 1, 2, 2}));
  EXPECT_EQ(s[1].line, 2);
}

TEST(CudaLexer, LineNumbersAfterSplicesAreThoseOfTheOriginalFile) {
  std::vector<CudaToken> t = lex("a\\\nb c\\\n\\\n\nd\n#define X \\\n  1\ne");
  EXPECT_EQ(kinds(t), "i:ab i:c i:d p:# i:define i:X n:1 i:e");
  EXPECT_EQ(lines(t), (std::vector<int>{1, 2, 5, 6, 6, 6, 7, 8}));
  EXPECT_TRUE(t[6].directive);  // the continued line is still the directive's
  EXPECT_FALSE(t[7].directive);
}

TEST(CudaLexer, PpNumbers) {
  EXPECT_EQ(kinds("1.e+5f 0x1p-3 1'000'000 .5e-3 0xe+1 1..2 3.f 2E-x"),
            "n:1.e+5f n:0x1p-3 n:1'000'000 n:.5e-3 n:0xe+1 n:1..2 n:3.f n:2E-x");
  EXPECT_EQ(kinds("1+2 a.5 x'y'"), "n:1 p:+ n:2 i:a n:.5 i:x c:'y'");
  EXPECT_EQ(kinds("1'"), "n:1 c:'");  // a quote after digits that starts no separator
}

TEST(CudaLexer, CharacterLiteralsWithEscapes) {
  std::vector<CudaToken> t = lex("'\\'' '\\\\' '\\x41' '\\101' '\\n' u8'a' L'\\t' U'\\u00e9' '\"'");
  ASSERT_EQ(t.size(), 9u) << kinds(t);
  std::vector<std::string> values = {"'", "\\", "A", "A", "\n", "a", "\t", "\xc3\xa9", "\""};
  for (size_t k = 0; k < t.size(); ++k) {
    EXPECT_EQ(t[k].kind, TokenKind::character) << k;
    EXPECT_EQ(t[k].value, values[k]) << k;
    EXPECT_FALSE(t[k].unterminated) << k;
  }
  EXPECT_EQ(t[5].text, "u8'a'");
}

TEST(CudaLexer, StringEscapesAreDecoded) {
  std::vector<CudaToken> t = lex("\"%%glob\\x61l\\164imer\\u0021\" L\"w\" u8\"x\"");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].value, "%%globaltimer!");
  EXPECT_EQ(t[1].text, "L\"w\"");
  EXPECT_EQ(t[2].value, "x");
}

TEST(CudaLexer, UnterminatedLiteralsEndAtTheirLineAndSaySo) {
  std::vector<CudaToken> t = lex("\"abc\nx 'd\ny R\"(raw\nz");
  ASSERT_EQ(kinds(t), "s:\"abc i:x c:'d i:y s:R\"(raw\nz");
  EXPECT_TRUE(t[0].unterminated);
  EXPECT_EQ(t[0].value, "abc");
  EXPECT_EQ(t[1].line, 2);
  EXPECT_TRUE(t[1].line_start);
  EXPECT_TRUE(t[2].unterminated);
  EXPECT_TRUE(t[4].unterminated);  // a raw string runs to the end of the source
  EXPECT_EQ(t[4].value, "raw\nz");
  EXPECT_FALSE(lex("\"ok\"")[0].unterminated);
}

TEST(CudaLexer, UnterminatedBlockCommentIsReportedWithItsLine) {
  LexedSource a = lex_cuda("x\n/* never closed\nclock64();\n");
  EXPECT_EQ(kinds(a.tokens), "i:x");
  EXPECT_EQ(a.unterminated_comment_line, 2);
  EXPECT_EQ(lex_cuda("/*/ y").unterminated_comment_line, 1);  // `/*/` does not close itself
  EXPECT_EQ(lex_cuda("/**/ y /* a */ // b").unterminated_comment_line, 0);
  EXPECT_EQ(kinds("/**/y"), "i:y");
  LexedSource d = lex_cuda("#define A 1 /* open\n");
  EXPECT_EQ(d.unterminated_comment_line, 1);
}

TEST(CudaLexer, DirectivesAfterCommentsAndAcrossBlockComments) {
  // A comment neither starts nor ends a line: the # after it still starts a directive.
  std::vector<CudaToken> t = lex("/* a */ # /* b */ define X 1\n/* multi\n line */ #include <a.h>\nx # y\n");
  ASSERT_EQ(kinds(t), "p:# i:define i:X n:1 p:# i:include h:<a.h> i:x p:# i:y");
  EXPECT_TRUE(t[0].line_start && t[0].directive);
  EXPECT_TRUE(t[1].space_before);
  EXPECT_TRUE(t[4].line_start && t[4].directive);
  EXPECT_EQ(t[4].line, 3);
  EXPECT_FALSE(t[8].directive);  // not the first token of its line
  // A directive goes on past a block comment that spans lines, to the newline after it.
  std::vector<CudaToken> d = lex("#define A /* one\ntwo */ 1\n2");
  EXPECT_EQ(kinds(d), "p:# i:define i:A n:1 n:2");
  EXPECT_TRUE(d[3].directive);
  EXPECT_EQ(d[3].line, 2);
  EXPECT_FALSE(d[4].directive);
  EXPECT_TRUE(d[4].line_start);
  // A line comment ends the directive at its newline, whatever it holds.
  std::vector<CudaToken> l = lex("#define B // /*\n#include \"x.h\"\n// */");
  EXPECT_EQ(kinds(l), "p:# i:define i:B p:# i:include s:\"x.h\"");
  EXPECT_TRUE(l[3].line_start && l[3].directive);
}

TEST(CudaLexer, DigraphDirectivesButNotDoubleHash) {
  std::vector<CudaToken> t = lex("%:define X\n%:%: y\n## z\n");
  ASSERT_EQ(kinds(t), "p:# i:define i:X p:## i:y p:## i:z");
  EXPECT_TRUE(t[0].directive);
  EXPECT_FALSE(t[3].directive);
  EXPECT_FALSE(t[5].directive);
}

TEST(CudaLexer, LiteralsInADirectiveEndWithItsLine) {
  std::vector<CudaToken> t = lex("#define S R\"(a\n)\" b\n");
  ASSERT_EQ(kinds(t), "p:# i:define i:S s:R\"(a p:) s:\" b");
  EXPECT_TRUE(t[3].unterminated);
  EXPECT_TRUE(t[3].directive);
  EXPECT_FALSE(t[4].directive);
}

TEST(CudaLexer, HeaderNamesOnlyWhereTheCompilerReadsThem) {
  EXPECT_EQ(kinds("#include <cub/cub.cuh>"), "p:# i:include h:<cub/cub.cuh>");
  EXPECT_EQ(lex("#include <cub/cub.cuh>")[2].value, "cub/cub.cuh");
  EXPECT_EQ(kinds("#include<a/*b>"), "p:# i:include h:<a/*b>");  // no comment inside a header name
  EXPECT_EQ(kinds("#include_next <a.h>\n#import <b.h>"), "p:# i:include_next h:<a.h> p:# i:import h:<b.h>");
  EXPECT_EQ(kinds("#include <a.h\n"), "p:# i:include p:< i:a p:. i:h");  // no closing >
  EXPECT_EQ(kinds("#if __has_include(<x.h>)"), "p:# i:if i:__has_include p:( h:<x.h> p:)");
  EXPECT_EQ(kinds("#define H <x.h>"), "p:# i:define i:H p:< i:x p:. i:h p:>");
  EXPECT_EQ(kinds("a < b > c"), "i:a p:< i:b p:> i:c");
  EXPECT_EQ(kinds("#include\n<a.h>"), "p:# i:include p:< i:a p:. i:h p:>");  // the next line is code
}

TEST(CudaLexer, IdentifiersDecodeUniversalCharacterNames) {
  EXPECT_EQ(kinds("\\u0063lock64 a\\U0001F600b $x \xc3\xa9t\xc3\xa9"),
            "i:clock64 i:a\xf0\x9f\x98\x80"
            "b i:$x i:\xc3\xa9t\xc3\xa9");
  // A backslash that starts no universal character name makes no identifier.
  EXPECT_EQ(kinds("\\u12 x \\ y"), "o:\\ i:u12 i:x p:\\ i:y");
  EXPECT_EQ(kinds("a\x01"
                  "b"),
            "i:a o:\x01 i:b");
}

TEST(CudaLexer, SpaceBeforeAndOffsets) {
  std::vector<CudaToken> t = lex("#define F(x) x\n#define G (x)\nf\\\noo bar");
  EXPECT_FALSE(t[3].space_before);  // F(
  EXPECT_TRUE(t[10].space_before);  // G (
  const CudaToken& foo = t[t.size() - 2];
  EXPECT_EQ(foo.text, "foo");
  EXPECT_EQ(foo.end - foo.begin, 3u);  // offsets in the spliced text
  EXPECT_TRUE(foo.line_start);
  EXPECT_TRUE(t.back().space_before);
  EXPECT_TRUE(t.back().is("bar"));
  EXPECT_FALSE(t.back().is("ba"));
}

TEST(CudaLexer, FragmentsHaveNoCommentsAndNoDirectives) {
  EXPECT_EQ(kinds(lex_cuda_fragment("a//b")), "i:a p:/ p:/ i:b");
  EXPECT_EQ(kinds(lex_cuda_fragment("/*x*/")), "p:/ p:* i:x p:* p:/");
  std::vector<CudaToken> d = lex_cuda_fragment("#define x");
  EXPECT_EQ(kinds(d), "p:# i:define i:x");
  EXPECT_FALSE(d[0].directive);
  EXPECT_EQ(d[0].line, 0);
  EXPECT_FALSE(d[1].space_before);
  EXPECT_TRUE(d[2].space_before);
}

TEST(CudaLexer, EmptyAndBrokenSourcesLexWithoutThrowing) {
  for (const char* src : {"", "\"", "'", "R\"", "R\"(", "/*", "/", "\\", "#", "%:", "<", "u8R\"x(", "#include <", "__has_include(<", "\\u"})
    EXPECT_NO_THROW(lex_cuda(src)) << src;
  EXPECT_TRUE(lex("").empty());
  EXPECT_TRUE(lex(" \t\n\f\v\r\n// c\n").empty());
}
