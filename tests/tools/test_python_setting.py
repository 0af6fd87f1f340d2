"""One Python interpreter everywhere (tools/python_env.sh: KFORGE_PYTHON_BIN, else the project's venv,
else on a GPU host prepared by ../shared/gpu/prepare.sh its python3): never a bare python3 that needs
packages. A static scan of every shell script, CMake file and Python source for Python started by
name; the helper's rules; and the scripts' cheap steps run with a python3 and a python first on PATH
that fail, so that a script reaching past the setting fails here. No GPU needed."""
import os
import re
import subprocess
import sys

import pytest

SOURCE_DIR = os.path.abspath(os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")))
HELPER = os.path.join(SOURCE_DIR, "tools", "python_env.sh")
PY_NAME = re.compile(r"python[0-9.]*")
# Words that start a command without being it (the command is the next word).
PREFIXES = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}", "time", "exec", "builtin", "nohup",
            "sudo", "env", "nice", "timeout", "taskset"}
FAKE = "FAKE-PYTHON: a bare python on PATH was run"


# ---- the static scan --------------------------------------------------------------------------

def drop_heredocs(text):
    """The script without its heredoc bodies (another language), line numbers kept."""
    out, heredoc = [], None
    for line in text.split("\n"):
        if heredoc:
            heredoc = None if line.strip() == heredoc else heredoc
            out.append("")
            continue
        m = re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line)
        heredoc = m.group(1) if m else None
        out.append(line)
    return "\n".join(out)


def split_substitutions(text, first_line=1):
    """[(first line, text)]: the script with each $(...) and `...` replaced by a word, and each of
    those, innermost first, as a script of its own (they run commands, inside quotes too)."""
    pieces = []
    rx = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
    while True:
        m = rx.search(text)  # $((...)), arithmetic, never matches: no parenthesis inside
        if not m:
            break
        body = m.group(1) if m.group(1) is not None else m.group(2)
        pieces.append((first_line + text[:m.start()].count("\n"), body))
        text = text[:m.start()] + "_SUBST_" + "\\\n" * body.count("\n") + text[m.end():]
    return [(first_line, text)] + pieces


def words_by_command(text, first_line):
    """(line, words) of each simple command of a script without substitutions: comments and array
    assignments left out, quotes kept on the words."""
    segs, words, word, quote, array, line, start = [], [], "", None, False, first_line, first_line
    i, depth, hard = 0, 0, 0  # open subshells; segments before the last newline or ';'
    while i < len(text):
        c = text[i]
        if c == "\n":
            line += 1
        if quote:
            quote = None if c == quote else quote
            word += c
        elif c == "\\" and i + 1 < len(text):
            if text[i + 1] == "\n":
                line += 1
            else:
                word += text[i:i + 2]
            i += 1
        elif c in "'\"":
            if not word and not words:
                start = line
            quote, word = c, word + c
        elif array:
            array = c != ")"
        elif c == "#" and not word:
            while i + 1 < len(text) and text[i + 1] != "\n":
                i += 1
        elif c == "(" and word.endswith("=") and not words:
            array, word = True, ""
        elif c in ";&|()\n" or c in " \t":
            if word:
                words.append(word)
            word = ""
            if c not in " \t":
                if words:
                    segs.append((start, words))
                words = []
                if c == "(":
                    depth += 1
                elif c == ")" and depth:
                    depth -= 1
                elif c == ")":  # a case pattern ('a|b)'): its words are not commands
                    del segs[hard:]
                if c in ";\n":
                    hard = len(segs)
        else:
            if not word and not words:
                start = line
            word += c
        i += 1
    if word:
        words.append(word)
    if words:
        segs.append((start, words))
    return segs


def shell_segments(text):
    segs = []
    for first, piece in split_substitutions(drop_heredocs(text)):
        segs += words_by_command(piece, first)
    return segs


def bare_python_in_shell(text):
    """Lines that start Python by name from PATH (python, python3, python3.11), or run a .py file
    directly (its shebang: python3 from PATH), instead of through "$KFORGE_PYTHON_BIN"."""
    found = []
    for line, ws in shell_segments(text):
        k = 0
        while k < len(ws):
            w = ws[k]
            if re.match(r"^\w+=", w) or re.fullmatch(r'"?\$\{\w+\[@\]\}"?', w):  # VAR=x, "${wrapper[@]}"
                k += 1
            elif w in PREFIXES:
                k += 1
                if w == "timeout":  # its options and the duration
                    while k < len(ws) and (ws[k].startswith("-") or re.fullmatch(r"[0-9.]+[smhd]?", ws[k])):
                        k += 1
                elif w in ("taskset", "nice"):
                    while k < len(ws) and ws[k].startswith("-"):
                        k += 2
                elif w == "env":
                    while k < len(ws) and ws[k].startswith("-"):
                        k += 1
            else:
                break
        if k >= len(ws) or ws[k] in ("command", "type", "which", "hash") and len(ws) > k + 1 and ws[k + 1].startswith("-"):
            continue
        cmd = ws[k].strip("\"'")
        base = cmd.rsplit("/", 1)[-1]
        if "$" not in cmd and (PY_NAME.fullmatch(base) or base.endswith(".py")):
            found.append((line, " ".join(ws)))
    return found


def cmake_calls(text):
    text = re.sub(r"#[^\n]*", "", text)
    for m in re.finditer(r"\b(add_test|execute_process|add_custom_command|add_custom_target)\s*\(([^()]*)\)", text):
        yield text[:m.start()].count("\n") + 1, m.group(2)


def bare_python_in_cmake(text):
    """Commands that run Python by name, or a .py / pytest without ${Python3_EXECUTABLE}."""
    found = []
    for line, body in cmake_calls(text):
        words = body.split()
        for k, w in enumerate(words):
            if w == "COMMAND" and k + 1 < len(words):
                base = words[k + 1].strip("\"").rsplit("/", 1)[-1]
                if PY_NAME.fullmatch(base) or base.endswith(".py"):
                    found.append((line, body.strip()))
        if re.search(r"\.py\b|pytest", body) and "${Python3_EXECUTABLE}" not in body:
            found.append((line, body.strip()))
    return found


# run(["python3", ...]), Popen("python", ...), os.execvp("python3", ...): a process started as python by name.
PY_ARGV = re.compile(r"\b(?:run|Popen|call|check_call|check_output|exec[lv]p?e?|spawn\w*)\(\s*\[?\s*f?[\"']"
                     r"(?:[^\"'\s]*/)?python[0-9.]*[\"']\s*[,\]]")
PY_SHELL = re.compile(r"(?:subprocess\.\w+|os\.system|os\.popen)\(\s*f?[\"']\s*(?:[^\"'\s]*/)?python[0-9.]*\s")
PY_BASH_C = re.compile(r"[\"']-c[\"']\s*,\s*f?[\"']\s*(?:[^\"'\s]*/)?python[0-9.]*\s")


def bare_python_in_py(text):
    """Subprocesses started as python/python3 by name: they must be sys.executable."""
    found = []
    for rx in (PY_ARGV, PY_SHELL, PY_BASH_C):
        for m in rx.finditer(text):
            found.append((text[:m.start()].count("\n") + 1, m.group(0)))
    return found


def project_files():
    r = subprocess.run(["git", "-C", SOURCE_DIR, "ls-files", "--cached", "--others", "--exclude-standard"],
                       capture_output=True, text=True)
    if r.returncode == 0 and r.stdout.strip():
        names = r.stdout.split("\n")
    else:  # not a git checkout: every file but the ignored folders
        names = []
        for d, subs, files in os.walk(SOURCE_DIR):
            subs[:] = [s for s in subs if s not in (".git", ".venv", ".gpu", "__pycache__") and not s.startswith("build")]
            names += [os.path.relpath(os.path.join(d, f), SOURCE_DIR) for f in files]
    return sorted(n for n in names if n and os.path.isfile(os.path.join(SOURCE_DIR, n)))


def kind_of(name):
    base = os.path.basename(name)
    if base == "CMakeLists.txt" or base.endswith(".cmake"):
        return "cmake"
    if base.endswith(".py"):
        return "py"
    if base.endswith(".sh"):
        return "sh"
    try:
        with open(os.path.join(SOURCE_DIR, name), "rb") as f:
            first = f.readline(200)
    except OSError:
        return None
    return "sh" if re.match(rb"#!\s*\S*/(env\s+)?(ba)?sh\b", first) else None


def test_the_scanner_finds_what_it_should():
    planted = ("python3 x.py\n"
               "timeout 40 python tools/y.py | tail\n"
               "a=$(python3 -c 'print(1)')\n"
               "echo \"$(python3.11 -c 1)\"\n"
               "  build) tools/dataset/synth_check.py d.h5 ;;\n  a|b) (cd x && python3 y.py) ;;\n"
               "env A=1 python3 - <<'EOF'\nimport python3\npython3 x\nEOF\n"
               "X=1 taskset -c 0,1 python3 z.py &\n"
               "\"${pin[@]}\" python3 w.py\n")
    lines = sorted(n for n, _ in bare_python_in_shell(planted))
    assert lines == [1, 2, 3, 4, 5, 6, 7, 11, 12], bare_python_in_shell(planted)
    clean = ("\"$KFORGE_PYTHON_BIN\" x.py  # python3 x.py\n"
             "py=$(command -v python3 2>/dev/null)\n"
             "debs=(git python3\n  python3 python3-venv)\n"
             "base=${KFORGE_BASE_PYTHON:-python3}\n"
             "\"$py\" - <<'EOF'\npython3 x\nEOF\n"
             "echo 'python3 x' \"run python3\"\n"
             "\"${pin[@]}\" \"$py\" tools/dataset/synth_gpu.py\n"
             "case $s in debs|python|cuda) ;; python) \"$py\" -c 1 ;; esac\n")
    assert bare_python_in_shell(clean) == []
    assert len(bare_python_in_cmake("add_test(NAME a COMMAND python3 -m pytest a.py)\n")) == 2
    assert bare_python_in_cmake("add_test(NAME b COMMAND ${Python3_EXECUTABLE} -m pytest b.py)\n"
                                "# add_test(NAME c COMMAND python c.py)\n") == []
    assert len(bare_python_in_py("subprocess.run(['python3', x])\nsubprocess.run(\"python3 y.py\", shell=True)\n"
                                 "subprocess.run(['bash', '-c', 'python3 z'])\n")) == 3
    assert len(bare_python_in_py("run('python', '-c', '1')\nos.execvp(\"python3\", [x])\n")) == 2
    assert bare_python_in_py("subprocess.run([sys.executable, TOOL])\nprint('python3 tools/x.py')\n"
                             "for name in (\"python\", \"python3\"):\n") == []


def test_no_script_cmake_file_or_python_source_starts_python_by_name():
    scanners = {"sh": bare_python_in_shell, "cmake": bare_python_in_cmake, "py": bare_python_in_py}
    this = os.path.relpath(os.path.abspath(__file__), SOURCE_DIR)
    seen, bad = {"sh": 0, "cmake": 0, "py": 0}, []
    for name in project_files():
        kind = kind_of(name)
        if kind is None or name == this:  # this file plants examples
            continue
        with open(os.path.join(SOURCE_DIR, name), encoding="utf-8", errors="replace") as f:
            text = f.read()
        seen[kind] += 1
        bad += [f"{name}:{line}: {what}" for line, what in scanners[kind](text)]
    # The scan saw the scripts it guards (a broken file list would pass vacuously).
    assert seen["sh"] >= 6 and seen["cmake"] >= 8 and seen["py"] >= 20, seen  # one CMakeLists.txt per folder
    assert not bad, "Python started by name (use \"$KFORGE_PYTHON_BIN\" from tools/python_env.sh, " \
                    "${Python3_EXECUTABLE} in CMake, sys.executable in Python):\n" + "\n".join(bad)


# ---- the helper's rules -----------------------------------------------------------------------

def fake_bin(tmp_path):
    """A folder holding a python3, a python and a python3.11 that fail, saying so."""
    d = tmp_path / "fakebin"
    d.mkdir(exist_ok=True)
    for name in ("python", "python3", "python3.11", "python3.12"):
        p = d / name
        p.write_text(f"#!/bin/sh\necho '{FAKE} ('\"$0\"')' >&2\nexit 97\n")
        p.chmod(0o755)
    return d


def clean_env(tmp_path, **extra):
    env = {k: v for k, v in os.environ.items() if k not in ("KFORGE_PYTHON_BIN", "KFORGE_VENV")}
    env["PATH"] = f"{fake_bin(tmp_path)}:{env.get('PATH', '/usr/bin:/bin')}"
    env.update(extra)
    return env


def resolve(root, env):
    return subprocess.run(["bash", "-c", '. "$0" && kforge_python "$1" && echo "$KFORGE_PYTHON_BIN"', HELPER, str(root)],
                          capture_output=True, text=True, env=env, timeout=60)


def test_helper_prefers_the_setting_then_the_venv_then_a_prepared_gpu_host(tmp_path):
    root = tmp_path / "root"
    venv_py = root / ".venv" / "bin" / "python"
    venv_py.parent.mkdir(parents=True)
    os.symlink(sys.executable, venv_py)
    env = clean_env(tmp_path)
    r = resolve(root, env)
    assert r.returncode == 0 and r.stdout.strip() == str(venv_py), r.stdout + r.stderr

    # KFORGE_PYTHON_BIN wins, made absolute; one that cannot run is an error, not a fallback.
    r = resolve(root, dict(env, KFORGE_PYTHON_BIN="python3"))
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "fakebin" / "python3"), r.stdout + r.stderr
    r = resolve(root, dict(env, KFORGE_PYTHON_BIN=str(tmp_path / "nowhere" / "python")))
    assert r.returncode == 1 and "KFORGE_PYTHON_BIN=" in r.stderr and "not an interpreter" in r.stderr, r.stderr

    # KFORGE_VENV names the venv.
    other = tmp_path / "other"
    (other / "bin").mkdir(parents=True)
    os.symlink(sys.executable, other / "bin" / "python")
    r = resolve(root, dict(env, KFORGE_VENV=str(other)))
    assert r.stdout.strip() == str(other / "bin" / "python"), r.stdout + r.stderr

    # No venv: an error naming the fix, never python3 from PATH ...
    bare = tmp_path / "bare"
    bare.mkdir()
    r = resolve(bare, env)
    assert r.returncode == 1 and r.stdout == "" and "run tools/setup.sh" in r.stderr, r.stdout + r.stderr
    # ... nor on a developer's checkout that only ran ../shared/gpu/prepare.sh (.gpu/ carried) ...
    (bare / ".gpu").mkdir()
    (bare / ".gpu" / "run.sh").write_text("# carried\n")
    deps = tmp_path / "deps"
    deps.mkdir()
    r = resolve(bare, dict(env, KFORGE_GPU_DEPS=str(deps)))
    assert r.returncode == 1 and "run tools/setup.sh" in r.stderr, r.stdout + r.stderr
    # ... except on the GPU host, where .gpu/run.sh unpacked the carried packages: its python3.
    (deps / ".done").write_text("")
    r = resolve(bare, dict(env, KFORGE_GPU_DEPS=str(deps)))
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "fakebin" / "python3"), r.stdout + r.stderr


# ---- the scripts, with a python3 on PATH that fails -------------------------------------------

def script_env(tmp_path, **extra):
    """No KFORGE_PYTHON_BIN: the scripts find the venv this test runs in (or, outside a venv, this
    interpreter through the setting); returns (env, the interpreter they must pick)."""
    if sys.prefix != sys.base_prefix and os.path.exists(os.path.join(sys.prefix, "bin", "python")):
        return clean_env(tmp_path, KFORGE_VENV=sys.prefix, **extra), os.path.join(sys.prefix, "bin", "python")
    return clean_env(tmp_path, KFORGE_PYTHON_BIN=sys.executable, **extra), sys.executable


def test_synth_dataset_steps_and_the_gpu_host_script_run_the_setting(tmp_path):
    work = tmp_path / "work"
    kforge = os.environ.get("KFORGE_BIN", "kforge")  # the status step reads the dataset through kforge
    (tmp_path / "synth.yaml").write_text("seed: 3\ntarget_tasks: 2\nshard_candidates: 6\n")
    subprocess.run([kforge, "synth", "--config", str(tmp_path / "synth.yaml"), "--out", str(work), "--quiet"],
                   check=True, capture_output=True, timeout=300)
    env, expected = script_env(tmp_path, SYNTH_WORK=str(work), KFORGE=kforge)
    script = os.path.join(SOURCE_DIR, "tools", "dataset", "synth_dataset.sh")
    r = subprocess.run(["bash", script, "status"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "0 of 2 rows measured (ok 0, rejected 0); 2 left" in r.stdout, r.stdout + r.stderr
    r = subprocess.run(["bash", script, "report"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 2 and "synth_calls_report: " in r.stderr and "no logs" in r.stderr and FAKE not in r.stderr, r.stdout + r.stderr
    # Without a venv or the setting the step stops at once, saying why.
    r = subprocess.run(["bash", script, "status"], capture_output=True, text=True, timeout=300,
                       env=dict(clean_env(tmp_path, SYNTH_WORK=str(work)), KFORGE_VENV=str(tmp_path / "novenv")))
    assert r.returncode == 2 and "no Python for the scripts" in r.stderr and FAKE not in r.stderr, r.stderr

    out = tmp_path / "pending"
    r = subprocess.run(["bash", os.path.join(SOURCE_DIR, "tools", "bench", "run_pending_gpu.sh"), str(out), "python"],
                       capture_output=True, text=True, env=env, timeout=300, cwd=SOURCE_DIR)
    assert r.returncode == 0 and "step python: rc 0" in r.stdout, r.stdout + r.stderr
    info = (out / "python.txt").read_text()
    assert f"python: {expected}\n" in info and "torch: " in info and FAKE not in info, info
    # Under a device call's limit a step that needs more than is left is skipped, the next one runs, and
    # the archive holds both lines.
    r = subprocess.run(["bash", os.path.join(SOURCE_DIR, "tools", "bench", "run_pending_gpu.sh"), str(out), "python:100000", "python:1"],
                       capture_output=True, text=True, env=dict(env, KFORGE_CALL_LIMIT_S="600"), timeout=300, cwd=SOURCE_DIR)
    assert r.returncode == 0 and "step python: skipped, " in r.stdout and "(needs 100000)" in r.stdout, r.stdout + r.stderr
    assert r.stdout.count("step python: rc 0") == 1, r.stdout
    assert (tmp_path / "pending.tgz").stat().st_size > 0


def test_setup_makes_an_isolated_venv_and_sets_an_existing_one_to_the_mode_asked(tmp_path):
    venv = tmp_path / "venv"
    base = os.path.realpath(sys.executable)  # python3 on PATH is the failing one
    if subprocess.run([base, "-c", "import ensurepip, venv"], capture_output=True).returncode != 0:
        pytest.skip(f"{base} cannot make a venv here (no ensurepip: Debian's python3-venv)")
    env = clean_env(tmp_path, KFORGE_VENV=str(venv), KFORGE_BASE_PYTHON=base)
    setup = os.path.join(SOURCE_DIR, "tools", "setup.sh")

    def run(*steps, **extra):
        return subprocess.run(["bash", setup, *steps], capture_output=True, text=True, env=dict(env, **extra), timeout=300)

    def cfg():
        return (venv / "pyvenv.cfg").read_text()

    r = run("venv")
    assert r.returncode == 0 and "creating" in r.stdout, r.stdout + r.stderr
    assert "include-system-site-packages = false" in cfg()
    # Isolated: the base interpreter's site-packages are not on its path.
    paths = subprocess.run([str(venv / "bin" / "python"), "-c", "import site, sys; print(site.ENABLE_USER_SITE, sys.path)"],
                           capture_output=True, text=True, env=env).stdout
    base_site = subprocess.run([base, "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True,
                               text=True).stdout.strip()
    assert base_site and base_site not in paths, (base_site, paths)
    r = run("venv")
    assert r.returncode == 0 and "present (include-system-site-packages = false)" in r.stdout, r.stdout
    r = run("venv", KFORGE_VENV_SYSTEM_SITE="1")
    assert "set to true" in r.stdout and "include-system-site-packages = true" in cfg(), r.stdout
    r = run("venv")
    assert "set to false" in r.stdout and cfg().count("include-system-site-packages") == 1, r.stdout + cfg()
    r = run("venv", KFORGE_VENV_SYSTEM_SITE="yes")
    assert r.returncode == 2 and "KFORGE_VENV_SYSTEM_SITE is 0" in r.stderr, r.stderr
    # A venv whose python no longer runs is made again; a folder that is not a venv is left alone.
    (venv / "bin" / "python").unlink()
    r = run("venv")
    assert r.returncode == 0 and "broken" in r.stdout and (venv / "bin" / "python").exists(), r.stdout + r.stderr
    (tmp_path / "notavenv").mkdir()
    (tmp_path / "notavenv" / "keep.txt").write_text("mine")
    r = run("venv", KFORGE_VENV=str(tmp_path / "notavenv"))
    assert r.returncode == 2 and "is not a venv" in r.stderr and (tmp_path / "notavenv" / "keep.txt").exists()
    r = run("nosuchstep")
    assert r.returncode == 2 and "unknown step 'nosuchstep'" in r.stderr
    assert FAKE not in r.stderr


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
