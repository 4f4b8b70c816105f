#!/usr/bin/env python3
"""The whole-host run's figure: cargo-mutants' outcomes joined with the triage ledger.

usage: score.py TRIAGE.tsv MUTANTS_OUT_DIR... [--all N]

Each MUTANTS_OUT_DIR is a cargo-mutants output directory (its outcomes.json); a mutant
tested in more than one run counts once, by its first outcome in the order given. `--all N`
names how many mutants the run covers, so that what is not tested yet is shown too.
A missed mutant the ledger does not list is printed as untriaged: the figure is not final
while any is.
"""

import csv
import json
import sys
from collections import Counter

# Misses of the per-mutant oracle that another test of the suite detects (tests/schedules.rs,
# run on them with `MUT_TEST`): counted as detected.
ELSEWHERE = "detected-elsewhere"
# Misses that leave no behaviour to judge: out of the denominator.
NO_BEHAVIOUR = {"equivalent", "fault-only", "not-rule-code", "variant-only", "not-reached"}
DETECTED = {"CaughtMutant", "Timeout"}


def outcomes(dirs):
    seen = {}
    for d in dirs:
        with open(f"{d}/outcomes.json") as f:
            for outcome in json.load(f)["outcomes"]:
                scenario = outcome["scenario"]
                if isinstance(scenario, dict) and "Mutant" in scenario:
                    seen.setdefault(scenario["Mutant"]["name"], outcome["summary"])
    return seen


def ledger(path):
    with open(path) as f:
        rows = csv.reader((line for line in f if not line.startswith("#")), delimiter="\t")
        next(rows)
        return {f"{m}: {desc}": category for m, desc, category, _ in rows}


def main(argv):
    total = None
    if "--all" in argv:
        i = argv.index("--all")
        total = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    if len(argv) < 2:
        sys.exit(__doc__)
    triage, dirs = ledger(argv[0]), argv[1:]
    seen = outcomes(dirs)
    summary = Counter(seen.values())
    missed = [name for name, s in seen.items() if s == "MissedMutant"]
    categories = Counter(triage.get(name, "untriaged") for name in missed)
    raw = sum(summary[s] for s in DETECTED)
    detected = raw + categories[ELSEWHERE]
    viable = len(seen) - summary["Unviable"]
    judged = viable - sum(categories[c] for c in NO_BEHAVIOUR)
    print(f"tested {len(seen)}" + (f" of {total}" if total else ""))
    print(
        f"caught {summary['CaughtMutant']}, timeout {summary['Timeout']}, "
        f"unviable {summary['Unviable']}, missed {len(missed)}"
    )
    print(f"raw: {raw} of {viable} viable detected ({100 * raw / max(viable, 1):.1f}%)")
    for category, n in sorted(categories.items()):
        print(f"  missed, {category}: {n}")
    print(
        f"triaged: {detected} of {judged} viable mutants with a behaviour to judge detected "
        f"({100 * detected / max(judged, 1):.1f}%)"
    )
    # A mutant that timed out is counted as detected (it hung the catalog), but a run on a
    # loaded machine can time out a mutant the catalog would not have seen: the figure
    # without them bounds the score from below until they are tested again.
    timeouts = summary["Timeout"]
    print(
        f"lower bound, the {timeouts} timeouts counted as missed: {detected - timeouts} of "
        f"{judged} ({100 * (detected - timeouts) / max(judged, 1):.1f}%)"
    )
    closed = categories["closed-later"]
    print(
        f"with the gaps closed since counted as detected (to be confirmed by a re-test): "
        f"{detected + closed} of {judged} ({100 * (detected + closed) / max(judged, 1):.1f}%)"
    )
    for name in missed:
        if name not in triage:
            print(f"untriaged: {name}")


if __name__ == "__main__":
    main(sys.argv[1:])
