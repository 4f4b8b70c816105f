#!/usr/bin/env bash
# One mutation run of the reference host (benches/MUTANTS.md), the whole catalog as oracle:
# MUT_WT (a worktree of its own: --in-place mutates it), MUT_OUT (output dir), MUT_FILES
# (space-separated host files, e.g. "$(cat benches/mutants/whole-half1.txt)"), MUT_NAMES
# (optional space-separated -F regexes on mutant names), MUT_ITERATE=--iterate to resume;
# MUT_TEST and MUT_TEST_NAME pick another oracle (default: the catalog, tests/conformance),
# MUT_TIMEOUT its timeout in seconds (default 40; the schedule cases wait for minutes:
# MUT_TEST=faults MUT_TEST_NAME=schedule_cases_pass_on_the_correct_host, formerly tests/schedules.rs).
set -u
cd "$MUT_WT"
export CARGO_TARGET_DIR="$MUT_WT/target-mut"
export CARGO_PROFILE_TEST_OPT_LEVEL=0 CARGO_PROFILE_DEV_DEBUG=0
args=()
for f in $MUT_FILES; do args+=(-f "$f"); done
for n in ${MUT_NAMES:-}; do args+=(-F "$n"); done
nice -n 19 cargo mutants --in-place --no-shuffle -o "$MUT_OUT" "${args[@]}" \
  --timeout "${MUT_TIMEOUT:-40}" --build-timeout 900 \
  --cargo-arg=--test="${MUT_TEST:-conformance}" ${MUT_ITERATE:-} \
  -- "${MUT_TEST_NAME:-every_case_passes_against_the_reference_host}"
git checkout -q -- src
