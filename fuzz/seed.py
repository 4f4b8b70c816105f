#!/usr/bin/env python3
"""Seeds the cargo-fuzz corpora (fuzz/corpus/<target>/) from recorded material.

Usage (from the repository root, after `cargo build`):
    python3 fuzz/seed.py REPORT_DIR [TRACE.json ...]

REPORT_DIR holds a report.json from `ahpspec run --report-dir REPORT_DIR` (its transcripts
seed the parser and the per-connection checks); the AHP upstream vectors beside the
repository's upstream/ahp/ seed the parser too; suites/, profiles/, a baseline and
the given fuzz traces (reports/fuzz/<seed>-<rule>.json) seed the loaders. The corpora are
not committed (see FUZZING.md).
"""
import hashlib
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
MAX_SEED = 64 * 1024


def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    if len(data) > MAX_SEED:
        return
    folder = CORPUS / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report = json.loads((pathlib.Path(sys.argv[1]) / "report.json").read_text())
    for case in report["cases"]:
        lines = {}
        for frame in case.get("transcript", []):
            arrow = ">" if frame["direction"] == "sent" else "<"
            lines.setdefault(frame.get("conn", ""), []).append(arrow + frame["text"])
            put("tape_bytes", frame["text"])
        for conn in lines.values():
            put("stream_checks", "\n".join(conn))
    upstream = ROOT / "upstream" / "ahp"
    for vector in sorted(upstream.glob("*/test-cases/**/*.json")):
        put("tape_bytes", vector.read_bytes())
    loaders = {0: "suites/*.toml", 1: "profiles/*.toml"}
    for pick, pattern in loaders.items():
        for path in sorted(ROOT.glob(pattern)):
            put("loaders", bytes([pick]) + path.read_bytes())
    put("loaders", b"\x02# known\nTOOL-007\n  ENV-003  # flaky\n\n")
    for trace in sys.argv[2:]:
        put("loaders", b"\x03" + pathlib.Path(trace).read_bytes())
    for target in sorted(p.name for p in CORPUS.iterdir()):
        print(target, len(list((CORPUS / target).iterdir())), "seeds")


main()
