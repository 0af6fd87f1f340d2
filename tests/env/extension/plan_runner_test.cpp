// The extension kind end to end on the CPU, every part real but the GPU: model_glue.py reads a
// CUDA-Agent-format model_new.py into a plan, the plan is read strictly and turned into a build,
// nvcc and g++ build the library, the worker's runner binds the task's tensors (parameters by
// state_dict name) and runs the plan through the library's registry; the answer is the reference's.
// The binding here computes on the host so that no GPU is needed; the GPU worker runs the same path.
#include "env/extension/plan_runner.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <memory>

#include <gtest/gtest.h>

#include "configs/error.h"
#include "env/extension/extension_build.h"

using namespace kforge;
using Json = nlohmann::json;

namespace {

const char* kModelNew = R"(import torch
import torch.nn as nn
import cuda_extension


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, slope=0.0):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.slope = slope

    def forward(self, x):
        y = cuda_extension.linear_forward(x.contiguous(), self.fc.weight, self.fc.bias)
        return cuda_extension.leaky(y, slope=self.slope)
)";

// Host-side stand-ins for kernels (the GPU worker would run the .cu's launchers instead).
const char* kBinding = R"(#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include "../binding_registry.h"

static torch::Tensor linear_forward(torch::Tensor x, torch::Tensor w, torch::Tensor b) { return torch::addmm(b, x, w.t()); }
static torch::Tensor leaky(torch::Tensor y, double slope, int64_t unused = 7) { return torch::where(y > 0, y, y * slope); }

static void register_all(pybind11::module& m) {
  m.def("linear_forward", &linear_forward);
  m.def("leaky", &leaky, py::arg("y"), py::arg("slope"), py::arg("unused") = 7);
}
REGISTER_BINDING(host_linear, register_all);
)";

Json glue(const std::string& model_new) {
  const std::string dir = std::string(KFORGE_EXT_TEST_CACHE) + "/glue-" + std::to_string(getpid());
  std::system(("mkdir -p " + dir + "/kernels").c_str());
  std::FILE* f = std::fopen((dir + "/model_new.py").c_str(), "w");
  std::fputs(model_new.c_str(), f);
  std::fclose(f);
  f = std::fopen((dir + "/kernels/host_linear_binding.cpp").c_str(), "w");
  std::fputs(kBinding, f);
  std::fclose(f);
  const std::string cmd = std::string(KFORGE_PYTHON) + " -I -S " + KFORGE_SOURCE_DIR_TEST + "/env/extension/model_glue.py " + dir;
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p.get())) out.append(buf, n);
  return Json::parse(out);
}

ExtensionBuilder& builder() {
  static ExtensionBuilder b(ExtensionToolchain::from_build(), KFORGE_EXT_TEST_CACHE);
  return b;
}

}  // namespace

TEST(PlanRunner, AGluedCudaAgentCandidateComputesTheReferencesAnswer) {
  const Json j = glue(kModelNew);
  ASSERT_FALSE(j.contains("error")) << j.dump();
  ExtensionPlan plan = parse_extension_plan(j);
  EXPECT_EQ(plan.format, "cuda_agent");
  EXPECT_EQ(plan.parameters(), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  ExtensionBuildRequest req = plan_build_request(plan, {{"kernels/host_linear_binding.cpp", kBinding},
                                                        {"model_new.py", kModelNew},
                                                        {"binding.cpp", "// CUDA Agent's fixed file: kforge writes its own"}});
  ASSERT_EQ(req.files.size(), 1u);  // neither model_new.py nor CUDA Agent's binding.cpp is built
  ExtensionBuildResult built = builder().build(req);
  ASSERT_TRUE(built.ok) << built.log;
  void* lib = dlopen(built.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  auto entry = reinterpret_cast<std::vector<kforge_ext::Function>* (*)()>(dlsym(lib, "kforge_ext_functions"));
  ASSERT_NE(entry, nullptr);

  at::manual_seed(3);
  PlanBindings b;
  at::Tensor x = at::randn({5, 4}), w = at::randn({3, 4}), bias = at::randn({3});
  b.inputs = {x};
  b.parameters = {{"fc.weight", w}, {"fc.bias", bias}};
  b.init_values = {int64_t{4}, int64_t{3}, 0.25};
  std::vector<at::Tensor> out = run_plan(plan, *entry(), b);
  ASSERT_EQ(out.size(), 1u);
  at::Tensor y = at::linear(x, w, bias);
  EXPECT_TRUE(at::allclose(out[0], at::where(y > 0, y, y * 0.25)));
  b.init_values.pop_back();  // slope from its default, 0.0: a ReLU
  EXPECT_TRUE(at::allclose(run_plan(plan, *entry(), b)[0], at::relu(y)));

  // What the task lacks, or the library does not register, is named before anything runs.
  PlanBindings missing = b;
  missing.parameters.erase("fc.bias");
  try {
    run_plan(plan, *entry(), missing);
    ADD_FAILURE() << "a missing parameter ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no parameter 'fc.bias'"), std::string::npos) << e.what();
  }
  ExtensionPlan renamed = plan;
  renamed.calls[0].fn = "linear_fwd";
  EXPECT_THROW(check_plan(renamed, *entry(), b), Error);
  // A wrong argument type inside a call is the call's error, with model_new.py's line.
  PlanBindings wrong = b;
  wrong.init_values = {int64_t{4}, int64_t{3}, x};  // a tensor where slope's float goes
  try {
    run_plan(plan, *entry(), wrong);
    ADD_FAILURE() << "a tensor slope ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model_new.py:14: leaky"), std::string::npos) << e.what();
  }
  dlclose(lib);
}

TEST(PlanRunner, PlansOutsideTheContractAreSpecErrors) {
  const Json good = {{"version", 1},
                     {"format", "load_inline"},
                     {"module", "m"},
                     {"sources", {{"name", "m"}, {"cpp_sources", "int f();"}, {"cuda_sources", ""}, {"functions", {"f"}}}},
                     {"init_args", Json::array()},
                     {"attrs", Json::object()},
                     {"forward_args", {"x"}},
                     {"calls", {{{"fn", "f"}, {"args", {{{"input", "x"}}}}, {"kwargs", Json::object()}, {"result", "t0"}, {"line", 3}}}},
                     {"returns", {{{"value", "t0"}}}}};
  EXPECT_NO_THROW(parse_extension_plan(good));
  auto refused = [&](Json j, const std::string& needle) {
    try {
      parse_extension_plan(j);
      ADD_FAILURE() << "accepted: " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  Json j = good;
  j["version"] = 2;
  refused(j, "not one this kforge reads");
  j = good;
  j["extra"] = 1;
  refused(j, "plan.extra is not a key");
  j = good;
  j["calls"][0]["args"][0] = {{"input", "x"}, {"literal", 1}};
  refused(j, "exactly one of");
  j = good;
  j["calls"][0]["args"][0] = {{"value", "t9"}};
  refused(j, "before a call made it");
  j = good;
  j["returns"] = {{{"literal", 1}}};
  refused(j, "must be a tensor");
  j = good;
  j["format"] = "triton";
  refused(j, "is not cuda_agent");
  j = good;
  j["sources"]["extra_ldflags"] = {"-lcublas"};
  ExtensionPlan p = parse_extension_plan(j);
  EXPECT_THROW(plan_build_request(p, {}), Error);
}
