#include "env/launch/kernel_signature.h"

#include <gtest/gtest.h>

using namespace kforge;

namespace {

const KernelSignature* find(const std::vector<KernelSignature>& ks, const std::string& name) {
  for (const auto& k : ks)
    if (k.name == name) return &k;
  return nullptr;
}

std::vector<std::string> names(const std::vector<KernelSignature>& ks) {
  std::vector<std::string> out;
  for (const auto& k : ks) out.push_back(k.name);
  return out;
}

}  // namespace

TEST(KernelSignature, ReadsPointerAndScalarParameters) {
  auto ks = parse_kernel_signatures(R"(
#include <cuda_fp16.h>
extern "C" __global__ void scale(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
)");
  ASSERT_EQ(ks.size(), 1u);
  const KernelSignature& k = ks[0];
  EXPECT_EQ(k.name, "scale");
  EXPECT_EQ(k.line, 3);
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].name, "x");
  EXPECT_EQ(k.params[0].type_text, "const float*");
  EXPECT_EQ(k.params[0].kind, ParamKind::pointer);
  EXPECT_TRUE(k.params[0].is_const);
  EXPECT_EQ(k.params[0].pointee, DType::float32);
  EXPECT_EQ(k.params[1].name, "y");
  EXPECT_FALSE(k.params[1].is_const);
  EXPECT_EQ(k.params[1].pointee, DType::float32);
  EXPECT_EQ(k.params[2].kind, ParamKind::i32);
  EXPECT_EQ(k.params[2].name, "n");
  EXPECT_EQ(k.params[3].kind, ParamKind::f32);
  EXPECT_EQ(k.params[3].name, "alpha");
}

TEST(KernelSignature, HandlesLaunchBoundsRestrictAndMultiLineParameterLists) {
  auto ks = parse_kernel_signatures(R"(extern "C"
__global__ void
__launch_bounds__(256, 2)
rows(const __half* __restrict__ in,   // the input
     __nv_bfloat16 *__restrict__ out, /* the output,
                                         bfloat16 */
     const long long rows,
     unsigned cols,
     size_t total,
     double eps)
{
}
)");
  ASSERT_EQ(ks.size(), 1u);
  const KernelSignature& k = ks[0];
  EXPECT_EQ(k.name, "rows");
  EXPECT_EQ(k.line, 4);
  ASSERT_EQ(k.params.size(), 6u);
  EXPECT_EQ(k.params[0].type_text, "const __half* __restrict__");
  EXPECT_EQ(k.params[0].pointee, DType::float16);
  EXPECT_TRUE(k.params[0].is_const);
  EXPECT_EQ(k.params[1].name, "out");
  EXPECT_EQ(k.params[1].pointee, DType::bfloat16);
  EXPECT_FALSE(k.params[1].is_const);
  EXPECT_EQ(k.params[2].kind, ParamKind::i64);
  EXPECT_TRUE(k.params[2].is_const);
  EXPECT_EQ(k.params[3].kind, ParamKind::u32);
  EXPECT_EQ(k.params[4].kind, ParamKind::u64);
  EXPECT_EQ(k.params[5].kind, ParamKind::f64);
}

TEST(KernelSignature, ReadsExternCBlocksAndSkipsTemplatesAndDeviceFunctions) {
  auto ks = parse_kernel_signatures(R"(
template <typename T, int N>
__global__ void generic(T* x, int n) { }

__device__ float helper(float a) { return a * 2.0f; }
struct Pair { float a, b; __device__ float sum() const { return a + b; } };
__constant__ float table[4] = {1, 2, 3, 4};

extern "C" {
__global__ void first(float* a) { generic<float, 4><<<1, 1>>>(a, 1); }
__device__ void not_a_kernel(float* a) {}
__global__ void second(const int* idx, int32_t n) {}
}

__global__ void mangled(float* a) {}  // C++ linkage: not launchable by name
extern "C" __global__ void third(void) {}
)");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"first", "second", "third"}));
  const KernelSignature* second = find(ks, "second");
  ASSERT_NE(second, nullptr);
  ASSERT_EQ(second->params.size(), 2u);
  EXPECT_EQ(second->params[0].pointee, DType::int32);
  EXPECT_EQ(second->params[1].kind, ParamKind::i32);
  EXPECT_TRUE(find(ks, "third")->params.empty());
}

TEST(KernelSignature, IgnoresKernelsInCommentsStringsAndPreprocessorLines) {
  auto ks = parse_kernel_signatures(R"(
// extern "C" __global__ void commented(float* x) {}
/* extern "C" __global__ void blocked(float* x) {} */
#define KERNEL extern "C" __global__ void macro_made(float* x) {}
#define LONG_MACRO(x) \
  extern "C" __global__ void continued(float* x) {}
__device__ const char* message = "extern \"C\" __global__ void quoted(float* x) {}";
extern "C" __global__ void real(float* x) {}
)");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"real"}));
  EXPECT_EQ(ks[0].line, 8);
}

TEST(KernelSignature, ClassifiesUnknownAndUnsupportedTypesAsOther) {
  auto ks = parse_kernel_signatures(R"(
struct Params { int n; };
extern "C" __global__ void k(const float4* v, Params p, float** pp, __half h, short s,
                             void* raw, const unsigned char* bytes, int& ref, float arr[]) {}
)");
  ASSERT_EQ(ks.size(), 1u);
  const auto& p = ks[0].params;
  ASSERT_EQ(p.size(), 9u);
  EXPECT_EQ(p[0].kind, ParamKind::pointer);
  EXPECT_FALSE(p[0].pointee.has_value());
  EXPECT_EQ(p[0].pointee_text, "float4");
  EXPECT_EQ(p[1].kind, ParamKind::other);
  EXPECT_EQ(p[1].name, "p");
  EXPECT_EQ(p[2].kind, ParamKind::other);  // pointer to pointer
  EXPECT_EQ(p[3].kind, ParamKind::other);  // a half by value
  EXPECT_EQ(p[4].kind, ParamKind::other);
  EXPECT_EQ(p[5].kind, ParamKind::pointer);
  EXPECT_EQ(p[5].pointee_text, "void");
  EXPECT_FALSE(p[5].pointee.has_value());
  EXPECT_EQ(p[6].kind, ParamKind::pointer);
  EXPECT_FALSE(p[6].pointee.has_value());
  EXPECT_EQ(p[6].pointee_text, "unsigned char");
  EXPECT_EQ(p[7].kind, ParamKind::other);  // a reference
  EXPECT_EQ(p[8].kind, ParamKind::pointer);
  EXPECT_EQ(p[8].name, "arr");
  EXPECT_EQ(p[8].pointee, DType::float32);
}

TEST(KernelSignature, MapsIntegerSpellingsToTheirWidths) {
  auto ks = parse_kernel_signatures(R"(
extern "C" __global__ void k(int a, signed int b, unsigned int c, long d, unsigned long long e,
                             int64_t f, uint32_t g, std::size_t h, long long int i, const int64_t* j,
                             long long* l, cuda::std::int32_t* m) {}
)");
  ASSERT_EQ(ks.size(), 1u);
  const auto& p = ks[0].params;
  ASSERT_EQ(p.size(), 12u);
  EXPECT_EQ(p[0].kind, ParamKind::i32);
  EXPECT_EQ(p[1].kind, ParamKind::i32);
  EXPECT_EQ(p[2].kind, ParamKind::u32);
  EXPECT_EQ(p[3].kind, ParamKind::i64);
  EXPECT_EQ(p[4].kind, ParamKind::u64);
  EXPECT_EQ(p[5].kind, ParamKind::i64);
  EXPECT_EQ(p[6].kind, ParamKind::u32);
  EXPECT_EQ(p[7].kind, ParamKind::u64);
  EXPECT_EQ(p[7].name, "h");
  EXPECT_EQ(p[8].kind, ParamKind::i64);
  EXPECT_EQ(p[9].pointee, DType::int64);
  EXPECT_TRUE(p[9].is_const);
  EXPECT_EQ(p[10].pointee, DType::int64);
  EXPECT_EQ(p[11].pointee, DType::int32);
}

TEST(KernelSignature, ConstAfterTheStarDoesNotMakeThePointeeConst) {
  auto ks = parse_kernel_signatures("extern \"C\" __global__ void k(float* const out, float const* in, const float* const both) {}");
  ASSERT_EQ(ks.size(), 1u);
  ASSERT_EQ(ks[0].params.size(), 3u);
  EXPECT_FALSE(ks[0].params[0].is_const);
  EXPECT_EQ(ks[0].params[0].name, "out");
  EXPECT_TRUE(ks[0].params[1].is_const);
  EXPECT_EQ(ks[0].params[1].pointee, DType::float32);
  EXPECT_TRUE(ks[0].params[2].is_const);
}

TEST(KernelSignature, ReadsUnnamedParametersAndDeclarations) {
  auto ks = parse_kernel_signatures(R"(
extern "C" __global__ void later(const float*, int);
extern "C" __global__ void unnamed(float*, unsigned) {}
extern "C" __global__ void later(const float* src, int count) {}
)");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"later", "unnamed"}));
  const KernelSignature* later = find(ks, "later");
  ASSERT_EQ(later->params.size(), 2u);
  EXPECT_EQ(later->params[0].name, "src");  // the definition replaces the declaration
  EXPECT_EQ(later->line, 4);
  const KernelSignature* unnamed = find(ks, "unnamed");
  ASSERT_EQ(unnamed->params.size(), 2u);
  EXPECT_EQ(unnamed->params[0].name, "");
  EXPECT_EQ(unnamed->params[0].kind, ParamKind::pointer);
  EXPECT_EQ(unnamed->params[1].name, "");
  EXPECT_EQ(unnamed->params[1].kind, ParamKind::u32);
}

TEST(KernelSignature, FindsKernelsInsideNamespacesAndAfterAttributes) {
  auto ks = parse_kernel_signatures(R"(
namespace detail { __device__ int twice(int v) { return 2 * v; } }
namespace outer {
extern "C" __global__ void __launch_bounds__(128) in_namespace(float* x) {}
}
extern "C" [[maybe_unused]] __global__ void __attribute__((noinline)) attributed(int* x) {}
extern "C" __global__ void __cluster_dims__(2, 1, 1) clustered(float* x) {}
)");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"in_namespace", "attributed", "clustered"}));
  EXPECT_EQ(find(ks, "attributed")->params[0].pointee, DType::int32);
}

TEST(KernelSignature, SurvivesMalformedSource) {
  EXPECT_TRUE(parse_kernel_signatures("").empty());
  EXPECT_TRUE(parse_kernel_signatures("extern \"C\" __global__ void broken(float* x").size() <= 1);
  EXPECT_TRUE(parse_kernel_signatures("}}}{{{ extern \"C\"").empty());
  auto ks = parse_kernel_signatures("}\nextern \"C\" __global__ void after_stray_brace(int n) {}");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"after_stray_brace"}));
}

TEST(KernelSignature, SkipsBodiesWithBracesStringsAndLambdas) {
  auto ks = parse_kernel_signatures(R"(
extern "C" __global__ void a(float* x) {
  auto f = [&](int i) { return x[i] > 0 ? '}' : '{'; };
  const char* s = "}{";
  if (f(0)) { x[0] = 1.0e-3f; }
}
extern "C" __global__ void b(int n) {}
)");
  EXPECT_EQ(names(ks), (std::vector<std::string>{"a", "b"}));
}

// Lines are spliced before tokens are read (env/cuda_source/source_text.h), as NVRTC does: a name or a
// type split by backslash-newline reads as one, and a comment ended by a continuation goes on.
TEST(KernelSignature, ReadsNamesAndTypesSplitByLineContinuations) {
  auto ks = parse_kernel_signatures(
      "extern \"C\" __global__ void sc\\\nale(const flo\\\nat* x, float* y, in\\\nt n) {}\n"
      "// a comment \\\nextern \"C\" __global__ void hidden(float* p) {}\n");
  ASSERT_EQ(ks.size(), 1u) << "the continued comment swallows the second kernel";
  EXPECT_EQ(ks[0].name, "scale");
  EXPECT_EQ(ks[0].line, 1);
  ASSERT_EQ(ks[0].params.size(), 3u);
  EXPECT_EQ(ks[0].params[0].type_text, "const float*");
  EXPECT_EQ(ks[0].params[0].pointee, DType::float32);
  EXPECT_EQ(ks[0].params[2].kind, ParamKind::i32);
}
