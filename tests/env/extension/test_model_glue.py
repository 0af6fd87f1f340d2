"""env/extension/model_glue.py: model_new.py read as an extension plan without running it (issue 28;
env/extension/EXTENSION_PLAN.md). The three accepted formats give the plans the worker executes; the
refused corpus (candidates/refused/, one exploit a file: `# expect: RULE` on its first line and
`# <- refused` on the line the refusal must name) is refused by the rule it names."""
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
GLUE = os.path.join(ROOT, "env", "extension", "model_glue.py")
CANDIDATES = os.path.join(HERE, "candidates")
REFUSED = os.path.join(CANDIDATES, "refused")
sys.path.insert(0, os.path.dirname(GLUE))
from glue_rules import GlueError  # noqa: E402
from model_glue import plan_of_source  # noqa: E402


def run_glue(path):
    """The script as the worker runs it: isolated, no site packages. Returns (exit code, parsed JSON)."""
    p = subprocess.run([sys.executable, "-I", "-S", GLUE, path], capture_output=True, text=True, timeout=60)
    assert p.stderr == "", p.stderr
    return p.returncode, json.loads(p.stdout)


def refusal(text):
    with pytest.raises(GlueError) as e:
        plan_of_source(text)
    return e.value


HEAD = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\nimport cuda_extension\n\n"


def model(init, forward, head=HEAD):
    return head + "class ModelNew(nn.Module):\n" + init + forward


def test_cuda_agent_workdir_gives_linear_parameters_and_one_call():
    rc, plan = run_glue(os.path.join(CANDIDATES, "cuda_agent_gemm_relu"))
    assert rc == 0, plan
    assert (plan["version"], plan["format"], plan["module"], plan["sources"]) == (1, "cuda_agent", "cuda_extension", {})
    assert plan["init_args"] == [{"name": "in_features"}, {"name": "out_features"}]
    assert plan["attrs"] == {"linear": {"module": "nn.Linear", "args": [{"init_arg": "in_features"}, {"init_arg": "out_features"}],
                                        "kwargs": {}}}
    assert plan["forward_args"] == ["x"]
    assert plan["calls"] == [{"fn": "gemm_relu_forward", "args": [{"input": "x", "contiguous": True}, {"parameter": "linear.weight"},
                                                                 {"parameter": "linear.bias"}, {"literal": 0}],
                              "kwargs": {}, "result": "t0", "line": 16}]
    assert plan["returns"] == [{"value": "t0"}]


def test_load_inline_sources_are_resolved_and_two_calls_chain():
    rc, plan = run_glue(os.path.join(CANDIDATES, "load_inline_scale_add.py"))
    assert rc == 0, plan
    assert (plan["format"], plan["module"]) == ("load_inline", "fused")
    src = plan["sources"]
    assert src["name"] == "scale_add_rowmax" and src["functions"] == ["scale_add", "row_max"]
    assert src["cpp_sources"].count("torch::Tensor") == 5 and src["cpp_sources"].endswith("row_max(torch::Tensor x);")
    assert src["cuda_sources"].startswith("\n#include <torch/extension.h>")  # header + f-string
    assert "constexpr int kBlock = 256;" in src["cuda_sources"] and "{{" not in src["cuda_sources"]
    assert (src["extra_cflags"], src["extra_cuda_cflags"], src["extra_ldflags"]) == (["-O3"], ["-O3", "--use_fast_math"], [])
    assert plan["init_args"] == [{"name": "scale", "default": -0.5}]
    assert plan["attrs"] == {"scale": {"init_arg": "scale"}, "ops": {"extension": True}}
    assert [c["fn"] for c in plan["calls"]] == ["scale_add", "row_max"]
    assert plan["calls"][0]["kwargs"] == {"scale": {"init_arg": "scale"}}
    assert plan["calls"][1]["args"] == [{"value": "t0"}]
    assert plan["returns"] == [{"value": "t0"}, {"value": "t1"}]


def test_cpp_extension_load_names_its_files_and_a_negative_keyword():
    rc, plan = run_glue(os.path.join(CANDIDATES, "cpp_load_softmax"))
    assert rc == 0, plan
    assert plan["format"] == "cpp_extension_load" and plan["module"] == "softmax_ext"
    assert plan["sources"]["files"] == ["scaled_softmax.cu", "scaled_softmax_bind.cpp"]
    assert plan["attrs"] == {"weight": {"parameter": "weight"}}
    assert plan["calls"][0]["args"] == [{"input": "x"}, {"parameter": "weight"}]
    assert plan["calls"][0]["kwargs"] == {"dim": {"literal": -1}}


def test_cpp_extension_load_refuses_a_missing_or_escaping_source(tmp_path):
    d = tmp_path / "cand"
    shutil.copytree(os.path.join(CANDIDATES, "cpp_load_softmax"), d)
    os.remove(d / "scaled_softmax.cu")
    rc, out = run_glue(str(d))
    assert rc == 1 and "'scaled_softmax.cu' is not a file in the candidate directory" in out["error"]["message"]
    text = (d / "model_new.py").read_text().replace('"scaled_softmax.cu"', '"../../etc/x.cu"')
    assert "relative path inside the candidate directory" in refusal(text).message


def test_cuda_agent_directory_without_kernels_is_refused(tmp_path):
    shutil.copy(os.path.join(CANDIDATES, "cuda_agent_gemm_relu", "model_new.py"), tmp_path / "model_new.py")
    rc, out = run_glue(str(tmp_path))
    assert rc == 1 and out["error"]["kind"] == "spec_error" and "no kernels/" in out["error"]["message"]


def refused_files():
    return sorted(f for f in os.listdir(REFUSED) if f.endswith(".py"))


@pytest.mark.parametrize("name", refused_files())
def test_refused_corpus_names_its_rule_and_line(name):
    path = os.path.join(REFUSED, name)
    with open(path) as f:
        lines = f.read().split("\n")
    rule = re.match(r"# expect: (\w+)\.", lines[0]).group(1)
    line = next(i + 1 for i, s in enumerate(lines) if s.endswith("# <- refused"))
    rc, out = run_glue(path)
    assert rc == 1
    assert out["error"]["rule"] == rule and out["error"]["line"] == line, out
    assert out["error"]["message"].startswith(f"model_new.py:{line}: ")


def test_refused_corpus_covers_the_extension_only_families():
    rules = {re.match(r"# expect: (\w+)\.", open(os.path.join(REFUSED, f)).readline()).group(1) for f in refused_files()}
    assert {"fallback", "torch_compute", "reference_model", "monkeypatch", "thread", "side_stream", "host_cache",
            "tensor_subclass", "control_flow", "import"} <= rules
    assert len(refused_files()) >= 8


def test_conv_hyperparameters_resolve_to_init_args_literals_and_defaults():
    plan = plan_of_source(model(
        "    def __init__(self, c, k, s):\n        super().__init__()\n"
        "        self.conv = nn.Conv2d(c, c, k, stride=s, padding=(1, 2), bias=False)\n",
        "    def forward(self, x):\n"
        "        return cuda_extension.conv(x, self.conv.weight, self.conv.bias, self.conv.stride[0], self.conv.padding[1],\n"
        "                                   self.conv.dilation[0], self.conv.groups, self.conv.in_channels)\n"))
    assert plan["calls"][0]["args"] == [{"input": "x"}, {"parameter": "conv.weight"}, {"literal": None},
                                        {"init_arg": "s", "index": 0}, {"literal": 2}, {"literal": 1}, {"literal": 1},
                                        {"init_arg": "c"}]
    err = refusal(model("    def __init__(self):\n        super().__init__()\n        self.conv = nn.Conv1d(2, 2, 3)\n",
                        "    def forward(self, x):\n        return cuda_extension.f(x, self.conv.stride)\n"))
    assert "is a tuple: pass one element" in err.message


def test_tuple_results_unpack_and_index_and_imported_functions_call():
    head = "import torch.nn as nn\nfrom cuda_extension import topk_forward as topk\n\n"
    plan = plan_of_source(model("", "    def forward(self, x):\n        values, idx = topk(x, 4)\n"
                                    "        both = topk(values, 2)\n        return idx, both[1]\n", head))
    assert plan["format"] == "cuda_agent" and [c["fn"] for c in plan["calls"]] == ["topk_forward", "topk_forward"]
    assert plan["calls"][1]["args"] == [{"value": "t0", "index": 0}, {"literal": 2}]
    assert plan["returns"] == [{"value": "t0", "index": 1}, {"value": "t1", "index": 1}]


def test_init_buffers_parameters_and_ignored_init_calls():
    plan = plan_of_source(model(
        "    def __init__(self, n, eps=1e-6):\n        super(ModelNew, self).__init__()\n"
        "        self.w = nn.Parameter(torch.empty(n, n, dtype=torch.float32))\n"
        "        nn.init.kaiming_uniform_(self.w, a=math.sqrt(5))\n"
        "        self.register_buffer('mask', torch.ones(n))\n        self.eps = eps\n        self.k = -3\n",
        "    def forward(self, x):\n        return cuda_extension.f(x, self.w, self.mask, self.eps, self.k)\n",
        HEAD + "import math\n"))
    assert plan["init_args"] == [{"name": "n"}, {"name": "eps", "default": 1e-6}]
    assert plan["attrs"] == {"w": {"parameter": "w"}, "mask": {"parameter": "mask"}, "eps": {"init_arg": "eps"}, "k": {"literal": -3}}
    assert plan["calls"][0]["args"][1:] == [{"parameter": "w"}, {"parameter": "mask"}, {"init_arg": "eps"}, {"literal": -3}]


@pytest.mark.parametrize("init,forward,rule,needle", [
    ("", "    def forward(self, a, b):\n        return cuda_extension.f(a) + b\n", "torch_compute", "not allowed in forward"),
    ("", "    def forward(self, a):\n        return F.relu(cuda_extension.f(a))\n", "torch_compute", "'torch.nn.functional.relu(...)'"),
    ("", "    def forward(self, a):\n        with torch.no_grad():\n            return cuda_extension.f(a)\n", "control_flow", "With"),
    ("", "    def forward(self, a):\n        for i in range(2):\n            a = cuda_extension.f(a)\n        return a\n",
     "control_flow", "For"),
    ("", "    def forward(self, a):\n        exec('x = 1')\n        return cuda_extension.f(a)\n", "dynamic_code", "exec"),
    ("", "    def forward(self, a):\n        global seen\n        return cuda_extension.f(a)\n", "host_cache", "global"),
    ("    def __init__(self):\n        super().__init__()\n        self.cache = {}\n", "    def forward(self, a):\n        return a\n",
     "host_cache", "container"),
    ("    def __init__(self, alpha):\n        super().__init__()\n        self.alpha = alpha * 2\n", "    def forward(self, a):\n"
     "        return a\n", "glue", "compute derived values in the extension"),
    ("", "    def forward(self, a):\n        return cuda_extension.f(a, self.nope)\n", "glue", "self.nope is not set"),
    ("", "    def forward(self, a, *rest):\n        return cuda_extension.f(a)\n", "glue", "no *args"),
    ("", "    def forward(self, cuda_extension):\n        return cuda_extension.f(a)\n", "glue", "hides the module-level name"),
    ("", "    def forward(self, a):\n        return cuda_extension.f(a, a.shape[0])\n", "glue", "not allowed in forward"),
    ("", "    def forward(self, a):\n        a.__class__ = torch.Tensor\n        return a\n", "monkeypatch", "__class__"),
    ("", "    def forward(self, a):\n        cuda_extension.f(a)\n", "glue", "must end with a return"),
    ("    def __init__(self):\n        super().__init__()\n        self.register_buffer('a.b', torch.ones(2))\n",
     "    def forward(self, a):\n        return a\n", "glue", "is not allowed in ModelNew.__init__"),
    ("", "    def forward(self, a):\n        return cuda_extension.f(a, 9223372036854775808)\n", "glue", "'9223372036854775808'"),
    ("", "    def forward(self, a):\n        return cuda_extension.f(a, 1e999)\n", "glue", "'1e309' is not allowed"),
])
def test_glue_refusals(init, forward, rule, needle):
    err = refusal(model(init, forward))
    assert err.rule == rule and needle in err.message, (err.rule, err.message)
    assert err.line > 4


LOAD_INLINE_HEAD = "import torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n"
ONE_FN = 'name="e", cpp_sources="torch::Tensor f(torch::Tensor x);", cuda_sources="", functions=["f"]'
TRIVIAL = "class ModelNew(nn.Module):\n    def forward(self, x):\n        return ext.f(x)\n"


@pytest.mark.parametrize("extra,needle", [
    (', build_directory="/tmp/b"', "'build_directory' is not allowed"),
    (', extra_include_paths=["/usr/include"]', "'extra_include_paths' is not allowed"),
    (", extra_cflags=FLAGS", "extra_cflags must be a string or a list"),
    (", verbose=os", "'verbose' must be a literal"),
    (", extra_cflags=['-O3', 7]", "extra_cflags must be a string or a list"),
    (", with_magic=True", "'with_magic' is not allowed"),
])
def test_load_inline_arguments_are_checked(extra, needle):
    err = refusal(LOAD_INLINE_HEAD + f"ext = load_inline({ONE_FN}{extra})\n" + TRIVIAL)
    assert needle in err.message and err.line == 3


def test_load_inline_flags_drop_empty_strings():
    plan = plan_of_source(LOAD_INLINE_HEAD + f'ext = load_inline({ONE_FN}, extra_cflags=[""], extra_ldflags=["-lcublas"])\n' + TRIVIAL)
    assert (plan["sources"]["extra_cflags"], plan["sources"]["extra_ldflags"]) == ([], ["-lcublas"])


def test_shipped_extension_samples_are_accepted():
    samples = os.path.join(ROOT, "datasets", "samples", "extension_candidates")
    dirs = sorted(os.path.join(r, "") for r, _, files in os.walk(samples) if "model_new.py" in files)
    if not dirs:
        pytest.skip("no shipped extension samples")
    for d in dirs:
        rc, plan = run_glue(d)
        assert rc == 0 and plan["calls"] and plan["returns"], (d, plan)


def test_load_inline_calls_only_its_functions_and_only_one_extension():
    src = LOAD_INLINE_HEAD + f"ext = load_inline({ONE_FN})\n"
    assert plan_of_source(src + TRIVIAL)["calls"][0]["fn"] == "f"
    assert "'g' is not one of load_inline's functions (f)" in refusal(src + TRIVIAL.replace("ext.f", "ext.g")).message
    assert "only one extension" in refusal(src + "import cuda_extension\n" + TRIVIAL).message
    fstr = LOAD_INLINE_HEAD + 'N = 2\next = load_inline(name="e", cpp_sources=f"int v = {N + 1};")\n' + TRIVIAL
    assert "written out" in refusal(fstr).message


@pytest.mark.parametrize("text,needle", [
    ("import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n", "loads no extension"),
    ("import cuda_extension\n", "defines no class ModelNew"),
    ("import cuda_extension\nclass ModelNew(\n", "syntax error"),
    ("import cuda_extension\nif __name__ == '__main__':\n    pass\n", "If at module level"),
    ("import cuda_extension\nimport torch.nn as nn\nclass ModelNew(nn.Module):\n    def helper(self):\n        pass\n",
     "only __init__ and forward"),
])
def test_module_level_refusals(text, needle):
    assert needle in refusal(text).message


def test_script_errors_are_one_json_object_and_usage_is_exit_2(tmp_path):
    bad = tmp_path / "model_new.py"
    bad.write_bytes(b"\xff\xfe not utf-8")
    rc, out = run_glue(str(bad))
    assert rc == 1 and out == {"error": {"kind": "spec_error", "message": "model_new.py: not UTF-8 (byte 0)", "rule": "glue", "line": 0}}
    rc, out = run_glue(str(tmp_path / "missing"))
    assert rc == 1 and "no model_new.py" in out["error"]["message"]
    p = subprocess.run([sys.executable, GLUE], capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage" in p.stderr


def test_format_doc_examples_are_accepted():
    with open(os.path.join(ROOT, "env", "extension", "EXTENSION_FORMAT.md")) as f:
        blocks = [b for b in re.findall(r"```python\n(.*?)```", f.read(), re.S) if "class ModelNew" in b]
    plans = [plan_of_source(b) for b in blocks]
    assert [p["format"] for p in plans] == ["cuda_agent", "load_inline"]
    assert plans[0]["calls"][0]["args"][2] == {"init_arg": "s"} and plans[1]["sources"]["functions"] == ["relu"]
