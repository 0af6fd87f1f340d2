"""ModelNew's two methods read as data (issue 28; model_glue.py): __init__ gives the init arguments and the
attributes (init values, literals, parameters by state_dict name, nn modules, the extension); forward
gives the extension calls, their arguments and the returned values (EXTENSION_PLAN.md)."""
import ast

from glue_rules import (FORWARD_ALLOWED, HYPER_DEFAULTS, NN_MODULES, STATE_LEAVES, TENSOR_FACTORIES, TUPLE_HYPERS, GlueError,
                        rule_of, dotted, literal)

# ---------------------------------------------------------------------------------------------------
# ModelNew.__init__: init arguments, attributes (init values, literals, parameters, modules, the extension).

def check_class(cls, imports):
    if len(cls.bases) != 1 or dotted(cls.bases[0], imports) != "torch.nn.Module" or cls.keywords or cls.decorator_list:
        raise GlueError(cls, "ModelNew must be `class ModelNew(nn.Module)` with no other base, keyword or decorator")
    methods = {}
    for node in cls.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            continue
        if isinstance(node, ast.FunctionDef) and node.name in ("__init__", "forward") and node.name not in methods:
            if node.decorator_list:
                raise GlueError(node, f"ModelNew.{node.name} cannot be decorated")
            methods[node.name] = node
            continue
        raise GlueError(node, "ModelNew may define only __init__ and forward (no other methods or class attributes)")
    if "forward" not in methods:
        raise GlueError(cls, "ModelNew defines no forward")
    return methods.get("__init__"), methods["forward"]


def _positional(fn, what, glue):
    a = fn.args
    if a.posonlyargs or a.vararg or a.kwarg or a.kwonlyargs or not a.args or a.args[0].arg != "self":
        raise GlueError(fn, f"{what} takes self and named positional parameters only (no *args, **kwargs or keyword-only ones)")
    for p in a.args[1:]:
        if p.arg in glue.imports or p.arg in glue.consts or p.arg == glue.module:
            raise GlueError(p, f"{what}'s parameter '{p.arg}' hides the module-level name '{p.arg}': rename it")
    return a.args[1:], [None] * (len(a.args) - 1 - len(a.defaults)) + list(a.defaults)


def _is_super_init(call, imports):
    f = call.func
    if isinstance(f, ast.Attribute) and f.attr == "__init__":
        if isinstance(f.value, ast.Call) and getattr(f.value.func, "id", "") == "super":
            return True
        return dotted(f.value, imports) == "torch.nn.Module"
    return False


class InitReader:
    def __init__(self, glue):
        self.glue = glue
        self.init_args = []
        self.attrs = {}

    def read(self, fn):
        if fn is None:
            return
        params, defaults = _positional(fn, "ModelNew.__init__", self.glue)
        for p, d in zip(params, defaults):
            entry = {"name": p.arg}
            if d is not None:
                try:
                    entry["default"] = literal(d, self.glue.consts)
                except ValueError:
                    raise GlueError(d, f"the default of '{p.arg}' must be a literal") from None
            self.init_args.append(entry)
        for node in fn.body:
            self._statement(node)

    def _names(self):
        return {a["name"] for a in self.init_args}

    def _statement(self, node):
        imports = self.glue.imports
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            call = node.value
            if _is_super_init(call, imports):
                return
            if isinstance(call.func, ast.Attribute) and call.func.attr in ("register_buffer", "register_parameter") and \
                    getattr(call.func.value, "id", "") == "self" and call.args and isinstance(call.args[0], ast.Constant) and \
                    isinstance(call.args[0].value, str) and call.args[0].value.isidentifier():
                self._inert(call)
                self.attrs[call.args[0].value] = {"parameter": call.args[0].value}
                return
            if (dotted(call.func, imports) or "").startswith("torch.nn.init."):
                self._inert(call)  # initialisation the reference's state_dict overwrites
                return
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            t = targets[0]
            if len(targets) == 1 and isinstance(t, ast.Attribute) and getattr(t.value, "id", "") == "self":
                self.attrs[t.attr] = self._attr_value(t.attr, node.value)
                return
        raise GlueError(node, f"'{ast.unparse(node)[:60]}' is not allowed in ModelNew.__init__: it may call super().__init__() and "
                        "set self.<attr> to an init parameter, a literal, the extension, nn.Parameter(torch.<factory>(...)) "
                        f"or one of nn.{', nn.'.join(sorted(NN_MODULES))}", rule_of(node))

    def _attr_value(self, attr, value):
        g = self.glue
        if isinstance(value, ast.Name) and value.id in self._names():
            return {"init_arg": value.id}
        if isinstance(value, ast.Name) and value.id == g.module:
            return {"extension": True}
        if isinstance(value, (ast.Dict, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)) or (
                isinstance(value, ast.List) and not value.elts):
            raise GlueError(value, f"self.{attr}: a container attribute is not allowed (a host-side cache)", "host_cache")
        try:
            return {"literal": literal(value, g.consts)}
        except ValueError:
            pass
        if isinstance(value, ast.Call):
            name = dotted(value.func, g.imports) or ""
            if name == "torch.nn.Parameter":
                self._inert(value)
                return {"parameter": attr}
            if name.startswith("torch.nn.") and name[len("torch.nn."):] in NN_MODULES:
                return self._module(value, name[len("torch.nn."):])
        raise GlueError(value, f"self.{attr} = {ast.unparse(value)[:60]}: not allowed; store an init parameter, a literal, "
                        "the extension, a parameter or an nn module as it is (compute derived values in the extension)",
                        rule_of(value))

    def _module(self, call, kind):
        names = NN_MODULES[kind]
        if len(call.args) > len(names):
            raise GlueError(call, f"nn.{kind} takes at most {len(names)} positional arguments")
        out = {"module": f"nn.{kind}", "args": [self._module_arg(a) for a in call.args], "kwargs": {}}
        for kw in call.keywords:
            if kw.arg in ("device", "dtype"):
                self._inert(kw.value)
                continue
            if kw.arg not in names:
                raise GlueError(call, f"nn.{kind} has no parameter '{kw.arg}' that ModelNew may set; it has {', '.join(names)}")
            out["kwargs"][kw.arg] = self._module_arg(kw.value)
        return out

    def _module_arg(self, node):
        if isinstance(node, ast.Name) and node.id in self._names():
            return {"init_arg": node.id}
        try:
            return {"literal": literal(node, self.glue.consts)}
        except ValueError:
            raise GlueError(node, "an nn module's arguments must be init parameters or literals") from None

    def _inert(self, node):
        """Arguments of a parameter's initialisation: never run, but only literals, init names and torch dtypes."""
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                name = dotted(n.func, self.glue.imports) or ""
                ok = (name in ("torch.nn.Parameter", "math.sqrt") or name.startswith("torch.nn.init.")
                      or name in (f"torch.{f}" for f in TENSOR_FACTORIES)
                      or (isinstance(n.func, ast.Attribute) and n.func.attr in ("register_buffer", "register_parameter")))
                if not ok:
                    raise GlueError(n, f"'{ast.unparse(n.func)}(...)' is not allowed when creating a parameter: use "
                                    f"nn.Parameter(torch.<{'|'.join(TENSOR_FACTORIES[:6])}|...>(shape)) (the judge loads its value)",
                                    rule_of(n))
            elif isinstance(n, ast.Name) and n.id not in self._names() and n.id not in self.glue.imports \
                    and n.id not in self.glue.consts and n.id != "self":
                raise GlueError(n, f"'{n.id}' is not an init parameter or a module constant")


# ---------------------------------------------------------------------------------------------------
# ModelNew.forward: extension calls on inputs, init values and parameters; tuple returns.

class ForwardReader:
    def __init__(self, glue, init):
        self.glue = glue
        self.attrs = init.attrs
        self.init_names = {a["name"] for a in init.init_args}
        self.forward_args = []
        self.locals = {}
        self.calls = []
        self.returns = None

    def read(self, fn):
        params, defaults = _positional(fn, "ModelNew.forward", self.glue)
        self.forward_args = [p.arg for p in params]
        body = list(fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        for i, node in enumerate(body):
            if isinstance(node, ast.Return):
                if i != len(body) - 1:
                    raise GlueError(body[i + 1], "statements after the return are not allowed")
                self._return(node)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                self._assign(node)
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                self._value(node.value)
            else:
                raise GlueError(node, f"{type(node).__name__} is not allowed in ModelNew.forward: {FORWARD_ALLOWED}", rule_of(node))
        if self.returns is None:
            raise GlueError(fn, "ModelNew.forward must end with a return of its outputs")

    def _assign(self, node):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1:
            raise GlueError(node, "chained assignment (a = b = ...) is not allowed in forward")
        target, value = targets[0], self._value(node.value)
        if isinstance(target, ast.Name):
            self._bind(target, value)
        elif isinstance(target, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name) for e in target.elts):
            if "value" not in value or "index" in value:
                raise GlueError(node, "only an extension call's result can be unpacked")
            for i, e in enumerate(target.elts):
                self._bind(e, {**value, "index": i})
        else:
            raise GlueError(node, f"assigning to '{ast.unparse(target)}' is not allowed in forward: bind plain names only",
                            "monkeypatch" if isinstance(target, ast.Attribute) else "glue")

    def _bind(self, target, value):
        self.locals[target.id] = value  # rebinding an input's name is fine: later reads see the new value

    def _return(self, node):
        if node.value is None:
            raise GlueError(node, "forward must return its output tensors")
        elts = node.value.elts if isinstance(node.value, (ast.Tuple, ast.List)) else [node.value]
        self.returns = [self._value(e) for e in elts]
        for e, v in zip(elts, self.returns):
            if "literal" in v or "init_arg" in v:
                raise GlueError(e, "forward returns tensors only (an output computed by the extension)")

    def _value(self, node):
        if isinstance(node, ast.Name):
            return self._name(node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
            return self._self_attr(node)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and getattr(node.value.value, "id", "") == "self":
            return self._submodule_attr(node.value.attr, node.attr, None, node)
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, ast.Call):
            return self._call(node)
        try:
            v = literal(node, self.glue.consts)
        except ValueError:
            v = ValueError
        if v is not ValueError and not isinstance(v, (str, list)):
            return {"literal": v}
        raise GlueError(node, f"'{ast.unparse(node)[:60]}' is not allowed in forward: {FORWARD_ALLOWED}", self._compute_rule(node))

    def _compute_rule(self, node):
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Compare)):
            return "torch_compute"
        if isinstance(node, (ast.IfExp, ast.BoolOp, ast.ListComp, ast.GeneratorExp, ast.Lambda)):
            return "control_flow"
        return "torch_compute" if any(dotted(n, self.glue.imports) for n in ast.walk(node) if isinstance(n, ast.Attribute)) else "glue"

    def _name(self, node):
        n = node.id
        if n in self.locals:
            return dict(self.locals[n])
        if n in self.forward_args:
            return {"input": n}
        if n in self.glue.consts and not isinstance(self.glue.consts[n], (str, list)):
            return {"literal": self.glue.consts[n]}
        raise GlueError(node, f"'{n}' is not an input of forward, a name bound in it, or a number constant")

    def _self_attr(self, node):
        attr = self.attrs.get(node.attr)
        if attr is None:
            raise GlueError(node, f"self.{node.attr} is not set in ModelNew.__init__")
        if "parameter" in attr or "init_arg" in attr or "literal" in attr:
            if isinstance(attr.get("literal"), (str, list)):
                raise GlueError(node, f"self.{node.attr} is a {type(attr['literal']).__name__}: extension arguments are tensors, "
                                "numbers, bools or None")
            return dict(attr)
        what = "the extension" if "extension" in attr else f"an {attr['module']}"
        raise GlueError(node, f"self.{node.attr} is {what}: pass its parameters (self.{node.attr}.weight) or call its functions")

    def _submodule_attr(self, owner, leaf, index, node):
        attr = self.attrs.get(owner)
        if attr is None or "module" not in attr:
            raise GlueError(node, f"self.{owner} is not an nn module set in ModelNew.__init__")
        kind = attr["module"][len("nn."):]
        names = NN_MODULES[kind]
        given = dict(zip(names, attr["args"]))
        given.update(attr["kwargs"])
        if leaf in STATE_LEAVES:
            if leaf == "bias" and given.get("bias", given.get("affine", given.get("elementwise_affine"))) == {"literal": False}:
                return {"literal": None}  # nn modules built without a bias have bias None
            if index is not None:
                raise GlueError(node, f"self.{owner}.{leaf} is a tensor: it cannot be indexed in forward", "torch_compute")
            return {"parameter": f"{owner}.{leaf}"}
        if leaf not in names:
            raise GlueError(node, f"self.{owner}.{leaf} is not a parameter or a constructor argument of nn.{kind}")
        value = given.get(leaf, {"literal": HYPER_DEFAULTS.get(leaf)})
        if leaf not in given and leaf not in HYPER_DEFAULTS:
            raise GlueError(node, f"self.{owner}.{leaf} has no value: pass it to nn.{kind}")
        if leaf in TUPLE_HYPERS and index is None:
            raise GlueError(node, f"self.{owner}.{leaf} is a tuple: pass one element (self.{owner}.{leaf}[0])")
        if index is not None and "literal" in value:
            v = value["literal"]
            value = {"literal": v[index] if isinstance(v, list) else v}
        elif index is not None:
            value = {**value, "index": index}
        if isinstance(value.get("literal"), (str, list)):
            raise GlueError(node, f"self.{owner}.{leaf} is not a number")
        return value

    def _subscript(self, node):
        try:
            index = literal(node.slice, self.glue.consts)
        except ValueError:
            index = None
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            raise GlueError(node, "only a non-negative integer literal may index a value in forward (no slices or tensor indexing)",
                            "torch_compute")
        base = node.value
        if isinstance(base, ast.Attribute) and isinstance(base.value, ast.Attribute) and getattr(base.value.value, "id", "") == "self":
            return self._submodule_attr(base.value.attr, base.attr, index, node)
        value = self._value(base)
        if "value" not in value or "index" in value:
            raise GlueError(node, "only an extension call's result (or an nn module's tuple argument) can be indexed", "torch_compute")
        return {**value, "index": index}

    def _extension_function(self, func):
        """The extension function a call names, or None."""
        g = self.glue
        if isinstance(func, ast.Name) and func.id in g.ext_functions:
            return g.ext_functions[func.id]
        if not isinstance(func, ast.Attribute):
            return None
        owner = func.value
        if isinstance(owner, ast.Name) and owner.id == g.module and owner.id not in self.locals:
            return func.attr
        if isinstance(owner, ast.Attribute) and getattr(owner.value, "id", "") == "self" and \
                self.attrs.get(owner.attr, {}).get("extension"):
            return func.attr
        return None

    def _call(self, node):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "contiguous" and not node.args and not node.keywords:
            return {**self._value(func.value), "contiguous": True}
        fn = self._extension_function(func)
        if fn is None:
            self._refuse_call(node)
        functions = self.glue.sources.get("functions")
        if functions and fn not in functions:
            raise GlueError(node, f"'{fn}' is not one of load_inline's functions ({', '.join(functions)})")
        args = [self._call_arg(a) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise GlueError(node, "**kwargs is not allowed in an extension call")
            kwargs[kw.arg] = self._call_arg(kw.value)
        result = f"t{len(self.calls)}"
        self.calls.append({"fn": fn, "args": args, "kwargs": kwargs, "result": result, "line": node.lineno})
        return {"value": result}

    def _call_arg(self, node):
        if isinstance(node, ast.Starred):
            raise GlueError(node, "*args is not allowed in an extension call")
        return self._value(node)

    def _refuse_call(self, node):
        func = node.func
        name = dotted(func, self.glue.imports)
        if name and name.split(".")[0] in ("torch", "math"):
            raise GlueError(node, f"'{name}(...)' in forward is PyTorch compute: forward may call only the extension's "
                            "functions (allocate outputs in C++ with torch::empty_like and the like)", "torch_compute")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and getattr(func.value.value, "id", "") == "self":
            raise GlueError(node, f"self.{func.value.attr} does not hold the extension (set self.{func.value.attr} = "
                            f"{self.glue.module} in __init__)")
        if isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "self":
            raise GlueError(node, f"calling self.{func.attr}(...) runs PyTorch (an nn module or a method): pass its parameters "
                            "to the extension instead", "torch_compute")
        if isinstance(func, ast.Attribute):
            raise GlueError(node, f"'.{func.attr}()' on a tensor is PyTorch compute in forward (only .contiguous() is allowed): "
                            "do it in the extension", "torch_compute")
        raise GlueError(node, f"calling '{ast.unparse(func)[:40]}' is not allowed in forward: {FORWARD_ALLOWED}")


