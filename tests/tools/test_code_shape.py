"""tools/bench/code_shape.py's rules: which files count, the folder rows, the untyped JSON read count,
the parse of `duplicates`' first line, and a record's table."""
import os
import sys

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
import code_shape as cs  # noqa: E402
from results_doc import problems  # noqa: E402


def test_which_files_count():
    assert cs.is_source("env/judge/evaluator.cpp")
    assert cs.is_source("tests/env/judge/evaluator_test.cpp")
    assert cs.is_source("env/gpu/kernels.cu") and cs.is_source("configs/error.h")
    assert not cs.is_source("env/judge/EVAL_REPORT.md")
    assert not cs.is_source("anticheat/corpus/partial_write/kernel.cu")
    assert not cs.is_source("checks/corpus/partial_write/kernel.cu")  # wherever the corpus moves
    assert not cs.is_source("tests/fuzz/seeds/dim_expr/x.cpp")
    assert not cs.is_source("tools/bench/compile_sources/warp_rms_fp16.cu")
    assert not cs.is_source("datasets/samples/candidates/softmax_rows/fused/kernel.cu")
    assert not cs.is_source(".gpu/x.cpp") and not cs.is_source("top.cpp")


def test_folder_rows():
    assert cs.folder_of("env/judge/evaluator.cpp") == "env/judge"
    assert cs.folder_of("env/evaluator/sub/x.cpp") == "env/evaluator"
    assert cs.folder_of("env/x.h") == "env/(top)"
    assert cs.folder_of("tools/kforge/main.cpp") == "tools/kforge"
    assert cs.folder_of("data_synth/task/task_spec.cpp") == "data_synth"
    assert cs.figure_key("env/(top)") == "env_top" and cs.figure_key("tools/bench") == "tools_bench"


def test_json_reads():
    src = r'''
    // j.contains("commented") and j.value("commented", 0) do not count
    /* nor j["block"] */
    if (j.contains("a") && j["a"].is_object()) x = j["a"].value("b", 0);   // 1 contains, 1 value, 2 subscripts
    auto v = j.at("c");                                                     // 1 at
    std::optional<int> o; int y = o.value();                                // std::optional's: no
    j["w"] = 1; j["w"]["x"] = 2; j["list"].push_back(3);                    // writes: no
    if (j["k"] == "s") s = "a // not a comment: j.value(\"no\")";          // 1 subscript (== is a read)
    int z = m.at(key);                                                      // no string key: no
    '''
    assert cs.json_reads(src) == {"contains": 1, "value": 1, "at": 1, "subscript": 3}


def test_strip_comments_keeps_lines_and_literals_quotes():
    text = 'a // c\n"//s" /* x\ny */ b R"(// raw)"'
    out = cs.strip_comments(text)
    assert out.count("\n") == text.count("\n")
    assert '"sss"' in out and '"ssssss"' in out and " c" not in out and "x" not in out and "//" not in out


def test_parse_duplicates():
    text = ("130 pairs of places (516 files read), each sharing runs of 6 or more identical or same-shape lines "
            "(95 by shape alone, 45 of those marked boilerplate)\nD1 a.cpp:1-9 ~ b.cpp:3-11\n"
            "incomplete: time ran out\n")
    d = cs.parse_duplicates(text)
    assert (d["pairs"], d["files_read"], d["shape_pairs"], d["boilerplate_pairs"]) == (130, 516, 95, 45)
    assert d["incomplete"] == ["incomplete: time ran out"]
    assert cs.parse_duplicates("no duplicates (12 files read)\n")["pairs"] == 0
    assert cs.parse_duplicates("incomplete: usage: …\n") is None


def test_a_tree_measured_and_recorded(tmp_path):
    files = {"env/judge/evaluator.cpp": 'int f(J& j) {\n  return j.value("a", 0) + j.contains("b");\n}\n',
             "env/episode/episode.cpp": "int g() { return 1; }\n",
             "tests/t.cpp": "int h() {\n" + "  int x = 0;\n" * 130 + "  return x;\n}\n",
             "anticheat/corpus/k/kernel.cu": "int k() { return 0; }\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    rels = cs.tree_files(str(tmp_path), git=False)
    shape = cs.measure(str(tmp_path), rels, 3)
    assert set(shape) == {"env/episode", "env/judge", "tests", "all", "code"}
    assert (shape["all"]["files"], shape["code"]["files"]) == (3, 2)
    assert shape["all"]["functions_over_120_lines"] == 1 and shape["code"]["functions_over_120_lines"] == 0
    judge = cs.judge_reads(str(tmp_path), rels)
    assert judge["evaluator.cpp"]["total"] == 2 and judge["report_text.cpp"]["paths"] == []
    figures = cs.figures_of(shape, judge, {"pairs": 4, "files_read": 3, "shape_pairs": 1, "boilerplate_pairs": 0,
                                           "incomplete": []})
    assert figures["judge_json_reads_total"] == 2 and "judge_json_reads_report_text" not in figures
    assert figures["duplicates_pairs"] == 4 and figures["tests_files"] == 1
    doc = {"gpu": "none", "driver": "", "cuda": "", "torch": "", "date": "2026-12-03", "commit": "x",
           "command": "c", "figures": figures, "details": {"folders": shape}}
    assert problems(doc) == []
    table = cs.compare(doc, doc)
    assert "| C++ incl. tests/: files | 3 | 3 |" in table and "| untyped JSON reads: total | 2 | 2 |" in table
