#!/usr/bin/env python3
"""The glue of an extension candidate's model_new.py, read without running it (issue 28).

    python3 -I -S model_glue.py FILE_OR_DIR

prints one JSON extension plan (env/extension/EXTENSION_PLAN.md) on stdout and exits 0, or prints
{"error": {"kind": "spec_error", "message": "model_new.py:LINE: ...", "rule": ..., "line": LINE}}
and exits 1. The candidate's Python is parsed with `ast`, never imported or executed: ModelNew is
turned into data (its init values, parameters by state_dict name, and the extension calls of its
forward) that the sandboxed C++ worker executes against the extension's registry.

Anything beyond that glue is refused with the construct's line and what is allowed instead; most
refusals are anti-cheat (issue 28's extension-only families: a fallback to PyTorch, calling or
subclassing the reference, patching torch, threads, side streams, host caches, tensor subclasses).
Standard library only: it runs in the sandbox, possibly with `-I -S`.
"""
import ast
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the script (the sandbox's tree is read-only)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves the script's folder off sys.path
from glue_model import ForwardReader, InitReader, check_class  # noqa: E402
from glue_rules import (FILE_LABEL, IGNORED_LOADER_KWARGS, LOAD_INLINE_PARAMS, LOAD_PARAMS, LOADERS,  # noqa: E402
                        MAX_SOURCE_BYTES, PLAN_VERSION, GlueError, import_rule, rule_of, dotted, literal, scan_forbidden)

# ---------------------------------------------------------------------------------------------------
# Module level: imports, string and number constants, the extension, ModelNew.


def read_import(node, imports):
    if isinstance(node, ast.Import):
        for a in node.names:
            bad = import_rule(a.name)
            if bad:
                raise GlueError(node, bad[1], bad[0])
            if a.asname:
                imports[a.asname] = a.name
            else:
                imports[a.name.split(".")[0]] = a.name.split(".")[0]
        return
    module = node.module or ""
    if node.level:
        raise GlueError(node, "relative imports are not allowed", "import")
    bad = import_rule(module)
    if bad is None and module == "torch.utils":
        bad = None if all(a.name == "cpp_extension" for a in node.names) else import_rule("torch.utils." + node.names[0].name)
    if bad:
        raise GlueError(node, bad[1], bad[0])
    for a in node.names:
        if a.name == "*":
            raise GlueError(node, f"'from {module} import *' is not allowed: name what you import", "import")
        if module != "__future__":
            bad = import_rule(f"{module}.{a.name}") if module == "torch" and a.name in ("multiprocessing",) else None
            if bad:
                raise GlueError(node, bad[1], bad[0])
            imports[a.asname or a.name] = f"{module}.{a.name}"


def string_value(node, consts):
    """Source text: literals, f-strings whose fields name module constants, `+`, and module string names."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name) and isinstance(consts.get(node.id), str):
        return consts[node.id]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = string_value(node.left, consts), string_value(node.right, consts)
        if left is not None and right is not None:
            return left + right
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            if isinstance(part, ast.Constant):
                out.append(part.value)
            elif (isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None
                  and isinstance(part.value, ast.Name) and part.value.id in consts
                  and not isinstance(consts[part.value.id], list)):
                out.append(str(consts[part.value.id]))
            else:
                return None
        return "".join(out)
    return None


def string_list(node, consts, what, allow_single=True):
    """A list (or tuple) of source strings, or one string when allow_single."""
    if isinstance(node, ast.Name) and isinstance(consts.get(node.id), list):
        return list(consts[node.id])
    if allow_single:
        single = string_value(node, consts)
        if single is not None:
            return [single]
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [string_value(e, consts) for e in node.elts]
        if all(i is not None for i in items):
            return items
    if isinstance(node, ast.Constant) and node.value is None:
        return []
    raise GlueError(node, f"{what} must be a string or a list of strings written out (literals, f-strings without "
                    "expressions, + and module-level string names)")


def _loader_kwargs(call, params, consts):
    given = {}
    if len(call.args) > len(params):
        raise GlueError(call, "too many positional arguments to the extension loader")
    for name, arg in zip(params, call.args):
        given[name] = arg
    for kw in call.keywords:
        if kw.arg is None or kw.arg not in params:
            raise GlueError(call, f"loader argument '{kw.arg or '**'}' is not allowed; allowed: {', '.join(params)}")
        if kw.arg in given:
            raise GlueError(call, f"loader argument '{kw.arg}' given twice")
        given[kw.arg] = kw.value
    for name in ("extra_include_paths", "build_directory"):
        if name in given and not (isinstance(given[name], ast.Constant) and given[name].value is None):
            raise GlueError(given[name], f"'{name}' is not allowed: the judge builds in its own directory, "
                            "with no files outside the candidate's")
    module_flag = given.get("is_python_module")
    if module_flag is not None and not (isinstance(module_flag, ast.Constant) and module_flag.value is True):
        raise GlueError(module_flag, "'is_python_module' must be True")
    for name in IGNORED_LOADER_KWARGS:
        if name in given:
            try:
                literal(given[name], consts)
            except ValueError:
                raise GlueError(given[name], f"'{name}' must be a literal") from None
    if "name" not in given or not isinstance(string_value(given["name"], consts), str):
        raise GlueError(call, "the extension loader needs name=\"...\" as a string literal")
    return given


def _safe_file(node, path, root):
    norm = os.path.normpath(path)
    if os.path.isabs(path) or norm.startswith("..") or not norm.endswith((".cu", ".cpp", ".cc", ".cxx")):
        raise GlueError(node, f"source '{path}' must be a .cu or .cpp file given as a relative path inside the candidate directory")
    if root is not None and not os.path.isfile(os.path.join(root, norm)):
        raise GlueError(node, f"source '{path}' is not a file in the candidate directory")
    return norm


def read_loader(call, fmt, consts, root):
    params = LOAD_INLINE_PARAMS if fmt == "load_inline" else LOAD_PARAMS
    given = _loader_kwargs(call, params, consts)
    flags = {k: [f for f in string_list(given[k], consts, k, allow_single=False) if f] if k in given else []
             for k in ("extra_cflags", "extra_cuda_cflags", "extra_ldflags")}  # KernelBench's extra_cflags=[""]: no flag
    name = string_value(given["name"], consts)
    if fmt == "cpp_extension_load":
        if "sources" not in given:
            raise GlueError(call, "load(...) needs sources=[...] (the candidate's .cu and .cpp files)")
        files = [_safe_file(given["sources"], f, root) for f in string_list(given["sources"], consts, "sources")]
        return {"name": name, "files": files, **flags}
    if "cpp_sources" not in given:
        raise GlueError(call, "load_inline(...) needs cpp_sources")
    out = {"name": name,
           "cpp_sources": "\n".join(string_list(given["cpp_sources"], consts, "cpp_sources")),
           "cuda_sources": "\n".join(string_list(given["cuda_sources"], consts, "cuda_sources")) if "cuda_sources" in given else "",
           "functions": string_list(given["functions"], consts, "functions") if "functions" in given else []}
    return {**out, **flags}


class Glue:
    """What the module level defines: imports, constants, the extension and ModelNew."""

    def __init__(self, root):
        self.root = root  # the candidate directory when one was given (load's sources are checked in it)
        self.imports = {}
        self.consts = {}
        self.format = None
        self.module = None
        self.sources = {}
        self.ext_functions = {}  # a name imported from cuda_extension -> the function's name
        self.model_new = None

    def read(self, tree):
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                read_import(node, self.imports)
                self._note_extension_import(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                continue  # a docstring
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                self._read_assign(node)
            elif isinstance(node, ast.ClassDef) and node.name == "ModelNew":
                self.model_new = node
            elif isinstance(node, ast.FunctionDef) and node.name in ("get_inputs", "get_init_inputs"):
                continue  # the task supplies inputs; these are never called
            else:
                raise GlueError(node, f"{type(node).__name__} at module level is not allowed: model_new.py may hold imports, "
                                "string and number constants, one extension load and class ModelNew", rule_of(node))
        if self.model_new is None:
            raise GlueError(None, "model_new.py defines no class ModelNew")
        if self.format is None:
            raise GlueError(None, "model_new.py loads no extension: `import cuda_extension` (a CUDA Agent workdir) or call "
                            "load_inline(...) or load(...) from torch.utils.cpp_extension at module level")

    def _set_extension(self, node, fmt, module):
        if self.format is not None:
            raise GlueError(node, "only one extension per model_new.py: put every function in one load_inline, load or cuda_extension")
        self.format, self.module = fmt, module

    def _note_extension_import(self, node):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "cuda_extension":
                    self._set_extension(node, "cuda_agent", a.asname or a.name)
        elif node.module == "cuda_extension":
            self._set_extension(node, "cuda_agent", "cuda_extension")
            self.ext_functions.update({a.asname or a.name: a.name for a in node.names})

    def _read_assign(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            raise GlueError(node, "module-level assignments bind one name to a constant or to the extension")
        name, value = targets[0].id, node.value
        loader = dotted(value.func, self.imports) if isinstance(value, ast.Call) else None
        if loader in LOADERS:
            self._set_extension(node, LOADERS[loader], name)
            self.sources = read_loader(value, LOADERS[loader], self.consts, self.root)
            return
        if isinstance(value, (ast.Dict, ast.Set, ast.DictComp, ast.SetComp, ast.ListComp)) or (
                isinstance(value, ast.Call) and getattr(value.func, "id", "") in ("dict", "set", "list", "defaultdict", "OrderedDict")):
            raise GlueError(node, f"module-level container '{name}' is not allowed (state kept between calls is a host-side cache)",
                            "host_cache")
        text = string_value(value, self.consts)
        if text is not None:
            self.consts[name] = text
            return
        if isinstance(value, (ast.List, ast.Tuple)):
            self.consts[name] = string_list(value, self.consts, name, allow_single=False)
            return
        try:
            v = literal(value, self.consts)
        except ValueError:
            raise GlueError(node, f"module-level '{name} = {ast.unparse(value)[:60]}' is not allowed: only string and number "
                            "constants and the extension load (load_inline/load) may be assigned") from None
        if isinstance(v, list):
            raise GlueError(node, f"module-level '{name}': lists of numbers are not allowed", "host_cache")
        self.consts[name] = v


# ---------------------------------------------------------------------------------------------------

def plan_of_source(text, root=None):
    """The extension plan of model_new.py's text; raises GlueError. `root`: the candidate directory, if any."""
    try:
        tree = ast.parse(text, filename=FILE_LABEL)
    except SyntaxError as e:
        raise GlueError(None if e.lineno is None else ast.Pass(lineno=e.lineno), f"syntax error: {e.msg}") from None
    except ValueError as e:  # null bytes
        raise GlueError(None, f"cannot be parsed: {e}") from None
    imports = {}
    for node in ast.walk(tree):  # the aliases scan_forbidden resolves; read_import checks them in order later
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                if isinstance(node, ast.Import):
                    imports[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                elif node.module:
                    imports[a.asname or a.name] = f"{node.module}.{a.name}"
    scan_forbidden(tree, imports)
    glue = Glue(root)
    glue.read(tree)
    init_fn, forward_fn = check_class(glue.model_new, glue.imports)
    init = InitReader(glue)
    init.read(init_fn)
    fwd = ForwardReader(glue, init)
    fwd.read(forward_fn)
    return {"version": PLAN_VERSION, "format": glue.format, "module": glue.module, "sources": glue.sources,
            "init_args": init.init_args, "attrs": init.attrs, "forward_args": fwd.forward_args,
            "calls": fwd.calls, "returns": fwd.returns}


def _candidate_files(path):
    if os.path.isdir(path):
        return os.path.join(path, FILE_LABEL), path
    return path, None


def plan_of_path(path):
    file, root = _candidate_files(path)
    if not os.path.isfile(file):
        raise GlueError(None, f"no {FILE_LABEL} in {path}")
    with open(file, "rb") as f:
        data = f.read(MAX_SOURCE_BYTES + 1)
    if len(data) > MAX_SOURCE_BYTES:
        raise GlueError(None, f"{FILE_LABEL} is over {MAX_SOURCE_BYTES >> 20} MiB")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise GlueError(None, f"not UTF-8 (byte {e.start})") from None
    plan = plan_of_source(text, root)
    if plan["format"] == "cuda_agent" and root is not None:
        kernels = os.path.join(root, "kernels")
        found = os.path.isdir(kernels) and any(f.endswith((".cu", ".cpp")) for f in os.listdir(kernels))
        if not found:
            raise GlueError(None, "model_new.py imports cuda_extension but the directory has no kernels/*.cu or kernels/*_binding.cpp")
    return plan


def error_json(err):
    where = f"{FILE_LABEL}:{err.line}: " if err.line else f"{FILE_LABEL}: "
    return {"error": {"kind": "spec_error", "message": where + err.message, "rule": err.rule, "line": err.line}}


def main(argv):
    if len(argv) != 2:
        print("usage: model_glue.py FILE_OR_DIR", file=sys.stderr)
        return 2
    try:
        plan = plan_of_path(argv[1])
    except GlueError as e:
        print(json.dumps(error_json(e)))
        return 1
    except (RecursionError, MemoryError):
        print(json.dumps(error_json(GlueError(None, "too deeply nested or too large to read"))))
        return 1
    print(json.dumps(plan))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
