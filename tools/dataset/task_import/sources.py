"""The modules to import, as Items: KernelBench .py files (a file, or a folder searched
recursively) and CUDA-Agent-Ops rows (.jsonl, or .parquet through pyarrow)."""
import ast
import dataclasses
import hashlib
import json
import os
import re

LEVEL_DIRS = {"level1": 1, "level2": 2, "level3": 3, "level4": 4}


class InputError(Exception):
    """A bad command line or an unreadable PATH: exit 2 with this message."""


@dataclasses.dataclass
class Item:
    file: str           # the path as given (joined under a folder given)
    row: object         # the row number in a cuda-agent file, else None
    source: str         # the module's Python text, exactly as read
    level: object       # 1, 2, 3 or None
    ops: object         # cuda-agent's ops (a list of str) or None
    file_sha256: str
    data_source: object = None
    read_error: str = ""  # a file that could not be read as text: a load_error

    @property
    def stem(self):
        return os.path.splitext(os.path.basename(self.file))[0]

    def label(self):
        return self.file if self.row is None else f"{self.file}:{self.row}"


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def level_of(path, given):
    """The level named by the nearest enclosing folder level1/level2/level3, else `given`."""
    parts = os.path.normpath(os.path.abspath(path)).split(os.sep)
    for part in reversed(parts[:-1]):
        if part in LEVEL_DIRS:
            return LEVEL_DIRS[part]
    return given


def kernelbench_items(paths, level):
    files = []
    for p in paths:
        if os.path.isdir(p):
            found = []
            for d, subdirs, names in os.walk(p):
                subdirs[:] = sorted(s for s in subdirs if not s.startswith(".") and s != "__pycache__")
                found += [os.path.join(d, n) for n in names if n.endswith(".py")]
            files += sorted(found)
        elif os.path.isfile(p):
            if not p.endswith(".py"):
                raise InputError(f"{p}: a kernelbench PATH is a .py file or a folder of them")
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or folder")
    for f in files:
        data = open(f, "rb").read()
        digest = hashlib.sha256(data).hexdigest()
        try:
            text, err = data.decode("utf-8"), ""
        except UnicodeDecodeError as e:
            text, err = "", f"not UTF-8 text: {e}"
        yield Item(file=f, row=None, source=text, level=level_of(f, level), ops=None, file_sha256=digest, read_error=err)


def parse_ops(value):
    """cuda-agent's `ops`: a list, or a JSON / Python literal text of one, or one name."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        for parse in (json.loads, ast.literal_eval):
            try:
                value = parse(text)
                break
            except (ValueError, SyntaxError):
                continue
        else:
            return [t for t in re.split(r"[,\s]+", text) if t]
    if isinstance(value, str):
        return [value]
    try:
        return [str(v) for v in value]
    except TypeError:
        return [str(value)]


def read_rows(path):
    """The rows of a .jsonl or .parquet file, as dicts."""
    if path.endswith(".jsonl"):
        rows = []
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise InputError(f"{path}:{n}: not a JSON line ({e})") from None
        return rows
    if path.endswith(".parquet"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise InputError(f"{path}: reading parquet needs pyarrow (tools/setup.sh installs it); "
                             "or convert the file to JSONL, one row per line") from None
        return pq.read_table(path).to_pylist()
    raise InputError(f"{path}: a cuda-agent PATH is a .jsonl or .parquet file")


def cuda_agent_items(paths):
    for p in paths:
        if not os.path.isfile(p):
            raise InputError(f"{p}: no such file")
        rows = read_rows(p)
        digest = sha256_file(p)
        for i, r in enumerate(rows):
            if not isinstance(r, dict):
                raise InputError(f"{p}: row {i} is not an object with code, ops, data_source")
            code = r.get("code")
            yield Item(file=p, row=i, source=code if isinstance(code, str) else "", level=None, ops=parse_ops(r.get("ops")),
                       file_sha256=digest, data_source=r.get("data_source"),
                       read_error="" if isinstance(code, str) else "the row has no `code` text")


def collect(fmt, paths, level=None):
    """Every module to import, in order; an InputError (exit 2) for a PATH that cannot be read."""
    return list(kernelbench_items(paths, level) if fmt == "kernelbench" else cuda_agent_items(paths))
