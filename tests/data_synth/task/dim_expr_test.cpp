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
