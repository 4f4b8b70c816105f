#!/bin/bash
# Re-test the whole-host run's timeouts at 2811711 on a quieter machine: WT OUT PART (0|1)
WT=$1; OUT=$2; PART=$3
cd $WT && git checkout -q -- src
export CARGO_TARGET_DIR="$WT/target-mut" CARGO_PROFILE_TEST_OPT_LEVEL=0 CARGO_PROFILE_DEV_DEBUG=0
args=()
while IFS= read -r name; do
  file=${name%%:*}
  args+=(-f "$file" -F "^$(printf '%s' "$name" | sed 's/[][\.*^$(){}+?|/]/\\&/g')\$")
done < <(awk -v p=$PART 'NR%2==p' "${TIMEOUTS:-/work/notes/timeouts28.txt}")
cargo mutants --in-place --no-shuffle -o "$OUT" "${args[@]}" --timeout 60 --build-timeout 900 \
  --cargo-arg=--test=conformance -- every_case_passes_against_the_reference_host
git checkout -q -- src
