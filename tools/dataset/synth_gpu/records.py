"""The part files: one JSON line per task (DIR/gpu/part-k.jsonl), written and fsync'ed one at a
time, so that a killed run resumes where it stopped (a torn last line is cut off first)."""
import glob
import json
import os

def part_files(out_dir):
    return sorted(glob.glob(os.path.join(out_dir, "part-*.jsonl")))


def read_records(out_dir):
    """Every complete record in every part file, in file order (a torn last line is ignored)."""
    recs = []
    for p in part_files(out_dir):
        with open(p) as f:
            for line in f:
                if not line.endswith("\n"):
                    break
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if isinstance(r, dict) and "id" in r and "status" in r:
                    recs.append(r)
    return recs


class PartWriter:
    def __init__(self, path):
        self.path = path
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        # A run killed mid-write leaves a torn last line: cut it off before appending.
        if os.path.exists(path):
            with open(path, "rb+") as f:
                data = f.read()
                if data and not data.endswith(b"\n"):
                    f.truncate(data.rfind(b"\n") + 1)
        self.f = open(path, "a")

    def write(self, rec):
        self.f.write(json.dumps(rec, allow_nan=False) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        self.f.close()



def pick_records(recs):
    """One record per id: the last one written (files and lines in order)."""
    by_id = {}
    for r in recs:
        by_id[r["id"]] = r
    return by_id


def restage_rule(spec):
    """The records to stage again, from "REASON[,REASON...][@DATE]" (kernelbench_gpu.sh's KB_RESTAGE):
    a predicate true for a record rejected for one of those reasons and written before DATE (an ISO
    time; without one, whenever written). An empty spec restages nothing. The date keeps a row's new
    record, written after DATE, from being staged again and again."""
    reasons, _, before = (spec or "").partition("@")
    wanted = {"rejected:" + x.strip() for x in reasons.split(",") if x.strip()}
    before = before.strip()
    return lambda r: r.get("status") in wanted and (not before or str(r.get("date", "")) < before)
