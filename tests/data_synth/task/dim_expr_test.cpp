#include "data_synth/task/dim_expr.h"

#include <gtest/gtest.h>

#include "configs/error.h"

using namespace kforge;

TEST(DimExpr, EvaluatesArithmeticOverNamedDims) {
  DimEnv env{{"B", 8}, {"H", 12}, {"N", 1000}};
  EXPECT_EQ(DimExpr::parse("B*H").eval(env), 96);
  EXPECT_EQ(DimExpr::parse("ceil_div(N, 256)").eval(env), 4);
  EXPECT_EQ(DimExpr::parse("(N + 255) / 256").eval(env), 4);
  EXPECT_EQ(DimExpr::parse("N // 3 % 7").eval(env), 333 % 7);
  EXPECT_EQ(DimExpr::parse("max(B, H) - min(B, H)").eval(env), 4);
  EXPECT_EQ(DimExpr::parse("-B + 2*H").eval(env), 16);
  EXPECT_EQ(DimExpr::parse("4096").eval({}), 4096);
}

TEST(DimExpr, DivisionFloorsLikePython) {
  EXPECT_EQ(DimExpr::parse("-7 / 2").eval({}), -4);
  EXPECT_EQ(DimExpr::parse("-7 % 3").eval({}), 2);
  EXPECT_EQ(DimExpr::parse("ceil_div(-7, 2)").eval({}), -3);
}

TEST(DimExpr, PrintsCanonicallyAndForPython) {
  DimExpr e = DimExpr::parse("(B+1)*H/ 2");
  EXPECT_EQ(e.str(), "(B + 1)*H/2");
  EXPECT_EQ(e.python(), "(B + 1)*H//2");
  EXPECT_EQ(DimExpr::parse(e.str()).eval({{"B", 3}, {"H", 5}}), 10);
  EXPECT_EQ(DimExpr::parse("ceil_div(N, 4)").python(), "(-(-N // 4))");
  EXPECT_EQ(DimExpr::parse("a - (b - c)").str(), "a - (b - c)");
  EXPECT_EQ(DimExpr::constant(-3).eval({}), -3);
}

TEST(DimExpr, ListsNamesAndConstness) {
  EXPECT_TRUE(DimExpr::parse("3*4").is_constant());
  auto names = DimExpr::parse("B*H + B").names();
  EXPECT_EQ(names, (std::set<std::string>{"B", "H"}));
}

TEST(DimExpr, BadSyntaxNamesTheColumn) {
  try {
    DimExpr::parse("B * (H + ");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec);
    EXPECT_NE(std::string(e.what()).find("bad dimension expression 'B * (H + '"), std::string::npos) << e.what();
  }
  EXPECT_THROW(DimExpr::parse("B $ 2"), Error);
  EXPECT_THROW(DimExpr::parse("pow(B, 2)"), Error);
  EXPECT_THROW(DimExpr::parse(""), Error);
}

TEST(DimExpr, EvaluationErrorsAreClear) {
  try {
    DimExpr::parse("B * Q").eval({{"B", 2}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown dimension 'Q'"), std::string::npos);
  }
  EXPECT_THROW(DimExpr::parse("B / 0").eval({{"B", 2}}), Error);
  EXPECT_THROW(DimExpr::parse("B * B * B").eval({{"B", int64_t{1} << 40}}), Error);
}

TEST(Identifier, AcceptsPythonNamesOnly) {
  EXPECT_TRUE(is_identifier("x_1"));
  EXPECT_TRUE(is_identifier("_y"));
  EXPECT_FALSE(is_identifier("1x"));
  EXPECT_FALSE(is_identifier("a-b"));
  EXPECT_FALSE(is_identifier(""));
}

// Issue 26: the expressions below come from a policy's launch.yaml; each used to kill the process
// (SIGFPE or SIGSEGV). Now each is a spec error that says why.
namespace {

std::string eval_error(const std::string& text, const DimEnv& env = {}) {
  try {
    DimExpr::parse(text).eval(env);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::spec) << text;
    return e.what();
  }
  ADD_FAILURE() << "no error for " << text.substr(0, 80);
  return "";
}

std::string repeat(const std::string& s, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += s;
  return out;
}

}  // namespace

TEST(DimExpr, Int64MinDividedByMinusOneIsAnOverflowError) {
  EXPECT_NE(eval_error("(0 - 9223372036854775807 - 1) / (0 - 1)").find("overflows 64 bits (/)"), std::string::npos);
  EXPECT_NE(eval_error("ceil_div(0 - 9223372036854775807 - 1, 0 - 1)").find("overflows 64 bits"), std::string::npos);
  EXPECT_NE(eval_error("M / (0 - 1)", {{"M", INT64_MIN}}).find("overflows"), std::string::npos);
}

TEST(DimExpr, ModuloByMinusOneIsZeroEvenForInt64Min) {
  EXPECT_EQ(DimExpr::parse("(0 - 9223372036854775807 - 1) % (0-1)").eval({}), 0);
  EXPECT_EQ(DimExpr::parse("7 % (0-1)").eval({}), 0);
  EXPECT_EQ(DimExpr::parse("7 % -3").eval({}), -2);  // Python: 7 % -3 == -2
  EXPECT_EQ(DimExpr::parse("-9223372036854775807 % 2").eval({}), 1);
  EXPECT_NE(eval_error("5 % (3 - 3)").find("divides by zero"), std::string::npos);
}

TEST(DimExpr, NegatingInt64MinIsAnOverflowError) {
  EXPECT_NE(eval_error("-(0 - 9223372036854775807 - 1)").find("overflows 64 bits (negation)"), std::string::npos);
  EXPECT_NE(eval_error("-M", {{"M", INT64_MIN}}).find("negation"), std::string::npos);
  EXPECT_NE(eval_error("0 - 9223372036854775807 - 2").find("overflows 64 bits (-)"), std::string::npos);
  EXPECT_NE(eval_error("9223372036854775807 + 1").find("(+)"), std::string::npos);
}

TEST(DimExpr, Int64MinConstantPrintsAndParsesBack) {
  DimExpr e = DimExpr::constant(INT64_MIN);
  EXPECT_EQ(e.eval({}), INT64_MIN);
  EXPECT_EQ(DimExpr::parse(e.str()).eval({}), INT64_MIN);
}

TEST(DimExpr, TwentyThousandParenthesesAreRefusedNotACrash) {
  std::string deep = repeat("(", 20000) + "1" + repeat(")", 20000);
  EXPECT_THROW(DimExpr::parse(deep), Error);
  // Under the length cap the nesting cap answers.
  std::string nested = repeat("(", 65) + "1" + repeat(")", 65);
  try {
    DimExpr::parse(nested);
    FAIL() << "65 levels accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than 64 levels"), std::string::npos) << e.what();
  }
  EXPECT_EQ(DimExpr::parse(repeat("(", 64) + "1" + repeat(")", 64)).eval({}), 1);
  EXPECT_THROW(DimExpr::parse(repeat("-", 5000) + "1"), Error);
  EXPECT_THROW(DimExpr::parse(repeat("min(1, ", 1000) + "1" + repeat(")", 1000)), Error);
}

TEST(DimExpr, TwentyThousandTermSumIsRefusedNotACrash) {
  try {
    DimExpr::parse("1" + repeat(" + 1", 20000));
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("longer than the limit of 4096"), std::string::npos) << e.what();
  }
  try {
    DimExpr::parse("1" + repeat("+1", 300));  // 601 characters, 300 operators
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than 256 operators"), std::string::npos) << e.what();
  }
  EXPECT_EQ(DimExpr::parse("1" + repeat("+1", 255)).eval({}), 256);
}
