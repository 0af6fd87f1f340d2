"""tools/bench/kernelbench_import.py's table (issue 29) on a made-up import: levels counted from the
folders, a task the pack refused (input_matters) not counted as imported, skips by reason, the share
of levels 1-3, the tiers of sizing.py read from the notes."""
import json
import os
import sys

SOURCE_DIR = os.environ.get("KFORGE_SOURCE_DIR", os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
sys.path.insert(0, os.path.join(SOURCE_DIR, "tools", "bench"))
import kernelbench_import  # noqa: E402


def lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_the_table_counts_levels_reasons_and_pack_refusals(tmp_path):
    kb = tmp_path / "KernelBench"
    for lv, names in {"level1": ["1_a.py", "2_b.py", "3_c.py"], "level2": ["1_d.py"], "level4": ["1_hf.py"]}.items():
        (kb / lv).mkdir(parents=True)
        for n in names:
            (kb / lv / n).write_text("")
    out = tmp_path / "out"
    out.mkdir()
    small = "checked and traced at a small size (tier A: N=8); the trace verified again at N=16"
    lines(out / "imported.jsonl", [
        {"id": "kb_l1_1_a", "file": f"{kb}/level1/1_a.py", "row": None, "seconds": 0.5, "notes": [small]},
        {"id": "kb_l1_2_b", "file": f"{kb}/level1/2_b.py", "row": None, "seconds": 2.0, "notes": []},
        {"id": "kb_l2_1_d", "file": f"{kb}/level2/1_d.py", "row": None, "seconds": 1.0, "notes": []}])
    lines(out / "skipped.jsonl", [
        {"file": f"{kb}/level1/3_c.py", "row": None, "reason": "stochastic", "detail": "dropout"},
        {"file": f"{kb}/level4/1_hf.py", "row": None, "reason": "needs_network", "detail": "level 4"},
        {"file": f"{kb}/level1/2_b.py", "row": None, "reason": "input_matters", "detail": "kb_l1_2_b: x1"}])
    figures, details = kernelbench_import.table(str(out), str(kb))
    assert figures["modules_count"] == 5 and figures["imported_count"] == 2
    assert figures["level1_imported_count"] == 1 and figures["level2_imported_count"] == 1
    assert figures["level4_modules_count"] == 1 and figures["level4_imported_count"] == 0
    assert figures["levels_1_3_imported_pct"] == 50.0  # 2 of the 4 modules of levels 1-3
    assert {k: v for k, v in figures.items() if k.startswith("skipped_")} == {
        "skipped_stochastic_count": 1, "skipped_needs_network_count": 1, "skipped_input_matters_count": 1}
    assert details["tiers"] == {"tier_A": 1, "own_size": 2}
    # an import packed before 3d907c7 named the pack's refusal by its task file: the same count
    text = (out / "skipped.jsonl").read_text().replace(f"{kb}/level1/2_b.py", f"{out}/tasks/kb_l1_2_b.yaml")
    (out / "skipped.jsonl").write_text(text)
    assert kernelbench_import.table(str(out), str(kb))[0] == figures
    assert list(details["slowest_imports_s"]) == ["level1/2_b.py", "level2/1_d.py", "level1/1_a.py"]
