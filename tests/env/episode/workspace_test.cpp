// The candidate workspace: what paths it takes, what it refuses and why, and its limits.
#include "env/episode/workspace.h"

#include <gtest/gtest.h>

#include "configs/sha256.h"
#include "env/evaluator/evaluator.h"

using namespace kforge;

TEST(Workspace, TakesTheCandidateFilesAndNotesUnderSubdirectories) {
  Workspace ws;
  for (const char* p : {"kernel.cu", "launch.yaml", "helpers.cuh", "sub/tile.h", "notes/plan.md", "a/b/log.txt", "v2-kernel_1.cu"})
    EXPECT_EQ(ws.check_path(p), "") << p;
}

TEST(Workspace, RefusesPathsThatLeaveOrHideInTheWorkspace) {
  Workspace ws;
  struct Case {
    const char* path;
    const char* why;
  };
  for (const Case& c : {Case{"", "empty"},
                        Case{"/etc/passwd", "absolute"},
                        Case{"/tmp/kernel.cu", "absolute"},
                        Case{"~/kernel.cu", "absolute"},
                        Case{"../kernel.cu", "leaves the workspace"},
                        Case{"a/../../kernel.cu", "leaves the workspace"},
                        Case{"sub/..", "leaves the workspace"},
                        Case{"./kernel.cu", "'.' component"},
                        Case{"a//b.cu", "empty or '.' component"},
                        Case{"kernel.cu/", "empty or '.' component"},
                        Case{".hidden.cu", "may not start with '.'"},
                        Case{"-rf.cu", "may not start with '.' or '-'"},
                        Case{"a\\b.cu", "backslash"},
                        Case{"my kernel.cu", "a character other than"},
                        Case{"k\xc3\xa9rnel.cu", "a character other than"},
                        Case{"a/b/c/d.cu", "levels deep"},
                        Case{"run.sh", "not a file the workspace takes"},
                        Case{"kernel.cu.sh", "not a file the workspace takes"},
                        Case{"Makefile", "not a file the workspace takes"},
                        Case{".cu", "may not start with '.'"}}) {
    std::string why = ws.check_path(c.path);
    EXPECT_NE(why.find(c.why), std::string::npos) << "'" << c.path << "': " << why;
  }
  std::string long_name(200, 'a');
  EXPECT_NE(ws.check_path(long_name + ".cu").find("characters long"), std::string::npos);
}

TEST(Workspace, AWriteRefusedLeavesTheWorkspaceUnchanged) {
  Workspace ws;
  EXPECT_EQ(ws.write("kernel.cu", "a"), "");
  EXPECT_NE(ws.write("../kernel.cu", "b"), "");
  EXPECT_NE(ws.write("kernel.cu", std::string("a\0b", 3)).find("NUL"), std::string::npos);
  EXPECT_EQ(ws.files().size(), 1u);
  EXPECT_EQ(*ws.read("kernel.cu"), "a");
  EXPECT_FALSE(ws.read("launch.yaml").has_value());
}

TEST(Workspace, EnforcesFileSizeCountAndTotalLimits) {
  WorkspaceLimits l;
  l.max_files = 3;
  l.max_file_bytes = 1000;
  l.max_total_bytes = 2500;
  Workspace ws(l);
  EXPECT_NE(ws.write("kernel.cu", std::string(1001, 'x')).find("at most 1000"), std::string::npos);
  EXPECT_EQ(ws.write("kernel.cu", std::string(1000, 'x')), "");
  EXPECT_EQ(ws.write("launch.yaml", std::string(1000, 'x')), "");
  EXPECT_NE(ws.write("notes.md", std::string(600, 'x')).find("at most 2500"), std::string::npos);
  EXPECT_EQ(ws.write("notes.md", std::string(500, 'x')), "");
  EXPECT_NE(ws.write("more.md", "x").find("already holds 3 files"), std::string::npos);
  // Overwriting is not a new file, and frees the old content's bytes.
  EXPECT_EQ(ws.write("notes.md", std::string(500, 'y')), "");
  EXPECT_EQ(ws.write("kernel.cu", "small"), "");
  EXPECT_EQ(ws.total_bytes(), 5 + 1000 + 500);
}

TEST(Workspace, ACandidateNeedsBothKernelAndLaunchPlan) {
  Workspace ws;
  std::string why;
  EXPECT_FALSE(ws.candidate("w", CandidateKind::kernel, why).has_value());
  EXPECT_NE(why.find("no kernel.cu and no launch.yaml"), std::string::npos);
  ws.write("kernel.cu", "k");
  EXPECT_FALSE(ws.candidate("w", CandidateKind::kernel, why).has_value());
  EXPECT_NE(why.find("no launch.yaml"), std::string::npos);
  ws.write("launch.yaml", "p");
  auto c = ws.candidate("w", CandidateKind::kernel, why);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->source, "k");
  EXPECT_EQ(c->plan_text, "p");
}

TEST(Workspace, ACandidateIsIdentifiedByTheContentOfItsJudgedFilesOnly) {
  Workspace ws;
  ws.write("kernel.cu", "extern \"C\" __global__ void k() {}\n");
  ws.write("launch.yaml", "launches: []\n");
  std::string why;
  std::string first = candidate_content_hash(*ws.candidate("a", CandidateKind::kernel, why));
  EXPECT_EQ(first.size(), 64u);
  ws.write("notes/plan.md", "try float4");
  EXPECT_EQ(candidate_content_hash(*ws.candidate("b", CandidateKind::kernel, why)), first) << "notes and labels are not the candidate";
  ws.write("kernel.cu", "extern \"C\" __global__ void k() {}\n// v2\n");
  EXPECT_NE(candidate_content_hash(*ws.candidate("a", CandidateKind::kernel, why)), first);
  // The same bytes split differently between the two files are another candidate.
  Candidate x, y;
  x.source = "ab";
  x.plan_text = "c";
  y.source = "a";
  y.plan_text = "bc";
  EXPECT_NE(candidate_content_hash(x), candidate_content_hash(y));
  // The kernel kind's hash is the one versions were recorded under before the extension kind.
  EXPECT_EQ(candidate_content_hash(x), sha256_hex("kernel.cu 2\nablaunch.yaml 1\nc"));
}

// The extension kind (issue 28): model_new.py and every code file beside it are the candidate;
// notes, plans and the kernel kind's files are not.
TEST(Workspace, AnExtensionCandidateIsModelNewAndTheCodeBesideIt) {
  Workspace ws;
  std::string why;
  EXPECT_FALSE(ws.candidate("w", CandidateKind::extension, why).has_value());
  EXPECT_NE(why.find("no model_new.py"), std::string::npos) << why;
  for (const auto& [path, text] : std::map<std::string, std::string>{{"model_new.py", "import cuda_extension\n"},
                                                                     {"kernels/gemm.cu", "__global__ void k() {}\n"},
                                                                     {"kernels/gemm_binding.cpp", "// binding\n"},
                                                                     {"kernels/common.cuh", "#pragma once\n"},
                                                                     {"kernels/util.h", "#pragma once\n"},
                                                                     {"notes.md", "try tiles of 128"},
                                                                     {"launch.yaml", "launches: []\n"}})
    ASSERT_EQ(ws.write(path, text), "") << path;
  auto c = ws.candidate("w", CandidateKind::extension, why);
  ASSERT_TRUE(c.has_value()) << why;
  EXPECT_EQ(c->kind, CandidateKind::extension);
  std::vector<std::string> paths;
  for (const auto& [path, text] : c->files) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"kernels/common.cuh", "kernels/gemm.cu", "kernels/gemm_binding.cpp", "kernels/util.h",
                                             "model_new.py"}));
  EXPECT_EQ(judged_files(*c), c->files);
  const std::string first = candidate_content_hash(*c);
  ws.write("notes.md", "tiles of 64");
  EXPECT_EQ(candidate_content_hash(*ws.candidate("w", CandidateKind::extension, why)), first);
  ws.write("kernels/util.h", "#pragma once\n// v2\n");
  EXPECT_NE(candidate_content_hash(*ws.candidate("w", CandidateKind::extension, why)), first);
  // The same bytes as a kernel candidate's are another candidate.
  Candidate k;
  k.source = "a";
  k.plan_text = "b";
  Candidate e = k;
  e.kind = CandidateKind::extension;
  e.files = {{"kernel.cu", "a"}, {"launch.yaml", "b"}};
  EXPECT_NE(candidate_content_hash(k), candidate_content_hash(e));
}

// Whatever the build compiles or includes is sent, as far as the config lets the policy write it
// (extension_file_kind, env/extension/source_rules.h): .hpp and .cc here.
TEST(Workspace, AnExtensionCandidateHoldsEveryFileTheBuildReads) {
  WorkspaceLimits limits;
  limits.allowed_extensions.push_back(".hpp");
  limits.allowed_extensions.push_back(".cc");
  limits.allowed_extensions.push_back(".py");
  Workspace ws(limits);
  for (const char* path : {"model_new.py", "kernels/tile.hpp", "kernels/host.cc", "kernels/helper.py"})
    ASSERT_EQ(ws.write(path, "x\n"), "") << path;
  std::string why;
  auto c = ws.candidate("w", CandidateKind::extension, why);
  ASSERT_TRUE(c.has_value()) << why;
  std::vector<std::string> paths;
  for (const auto& [path, text] : c->files) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"kernels/host.cc", "kernels/tile.hpp", "model_new.py"})) << "helper.py is not built";
}
