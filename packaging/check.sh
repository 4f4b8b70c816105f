#!/usr/bin/env bash
# The packaging check, run by hand before a release (not in every CI run):
#
#   1. a release build (cargo build --release --locked);
#   2. npm: the launcher package `ahpspec` and the platform package `@ahpspec/linux-x64` (with
#      the release binary) packed as tarballs, installed from those tarballs into a fresh
#      project outside the source tree with `npm install --offline`, then `npx ahpspec run`;
#   3. PyPI: the wheel built by maturin (bindings = "bin"), installed into a fresh virtual
#      environment with `pip install --no-index`, then `ahpspec run` from the venv's PATH;
#   4. crates.io: `cargo package --list` (suites and schemas inside), then
#      `cargo install --path .` into a fresh root, then `ahpspec run` through it.
#
# Every `ahpspec run` certifies the built-in reference host from a directory outside the
# source tree and must exit 0. The transcript goes to packaging/CHECK.md.
#
# Needs cargo, node + npm, python3 and maturin (`pip install maturin`; MATURIN=path overrides).
# Work files go to $AHPSPEC_CHECK_DIR (default: a fresh directory under ${TMPDIR:-/tmp}).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${AHPSPEC_CHECK_DIR:-${TMPDIR:-/tmp}/ahpspec-packaging-check}
MATURIN=${MATURIN:-maturin}
VERSION=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$ROOT/Cargo.toml" | head -n 1)
REPORT=$ROOT/packaging/CHECK.md
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}

case "$OUT" in
"$ROOT"/*) echo "check.sh: AHPSPEC_CHECK_DIR must be outside the source tree" >&2; exit 2 ;;
esac
rm -rf "$OUT"
mkdir -p "$OUT/dist"
: >"$OUT/transcript.md"

note() { printf '%s\n' "$*" >>"$OUT/transcript.md"; }

# Paths as the transcript shows them: $OUT and $REPO instead of this machine's.
shown() { sed -e "s#$OUT#\$OUT#g" -e "s#$ROOT#\$REPO#g"; }

# The arguments as a shell would take them back (single quotes where needed).
quoted() {
    local arg out=() sq="'" esc="'\\''"
    for arg in "$@"; do
        if [[ $arg =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
            out+=("$arg")
        else
            out+=("'${arg//$sq/$esc}'")
        fi
    done
    printf '%s' "${out[*]}"
}

# Runs a command from directory $1, puts it and the last lines of its output in the
# transcript (its whole output stays in $LAST_LOG), and stops the check when it fails.
LAST_LOG=
run_in() {
    local dir=$1
    shift
    LAST_LOG="$OUT/logs/$(date +%s%N).log"
    mkdir -p "$OUT/logs"
    note ""
    note '```console'
    printf '$ (cd %s && %s)\n' "$dir" "$(quoted "$@")" | shown >>"$OUT/transcript.md"
    set +e
    (cd "$dir" && "$@") >"$LAST_LOG" 2>&1
    local code=$?
    set -e
    { grep -vE '^\s*(Compiling|Downloaded|Downloading) ' "$LAST_LOG" || true; } | shown | tail -n 8 >>"$OUT/transcript.md"
    note "(exit $code)"
    note '```'
    if [ "$code" -ne 0 ]; then
        echo "check.sh: failed ($code): $*" >&2
        tail -n 40 "$LAST_LOG" >&2
        exit "$code"
    fi
}

# The badge a run wrote (the scope of what it certified).
badge() { note ""; note "badge.json: \`$(cat "$1/badge.json")\`"; }

note "# Packaging check"
note ""
note "Run by \`packaging/check.sh\` on $(date -u +%Y-%m-%d) for ahpspec $VERSION ($(uname -sm)):"
note "$(cargo --version), node $(node --version), npm $(npm --version), $(python3 --version),"
note "$("$MATURIN" --version). \`\$OUT\` is a fresh directory outside the source tree \`\$REPO\`;"
note "each install reads only the artefacts in \`\$OUT/dist\`, with the network off for npm and pip,"
note "and each \`ahpspec run\` certifies the built-in host from a directory outside the source tree."

note ""
note "## Release build"
run_in "$ROOT" cargo build --release --locked
BIN=$CARGO_TARGET_DIR/release/ahpspec

note ""
note "## npm: \`ahpspec\` and \`@ahpspec/linux-x64\`"
mkdir -p "$OUT/npm/linux-x64/bin"
cp -r "$ROOT/packaging/npm/ahpspec" "$OUT/npm/ahpspec"
cp "$ROOT/packaging/npm/platforms/linux-x64/package.json" "$OUT/npm/linux-x64/"
cp "$BIN" "$OUT/npm/linux-x64/bin/ahpspec"
run_in "$OUT/npm/linux-x64" npm pack --pack-destination "$OUT/dist"
run_in "$OUT/npm/ahpspec" npm pack --pack-destination "$OUT/dist"
mkdir -p "$OUT/npm-project"
printf '{ "name": "check", "version": "1.0.0", "private": true }\n' >"$OUT/npm-project/package.json"
run_in "$OUT/npm-project" npm install --offline --no-audit --no-fund \
    "$OUT/dist/ahpspec-linux-x64-$VERSION.tgz" "$OUT/dist/ahpspec-$VERSION.tgz"
run_in "$OUT/npm-project" npx --offline ahpspec --version
run_in "$OUT/npm-project" npx --offline ahpspec run --report-dir "$OUT/npm-project/reports"
badge "$OUT/npm-project/reports"

note ""
note "## PyPI: the wheel (maturin, bindings = \"bin\")"
run_in "$ROOT/packaging/pypi" "$MATURIN" build --release --locked --out "$OUT/dist"
WHEEL=$(ls "$OUT"/dist/ahpspec-"$VERSION"-*.whl)
run_in "$OUT" python3 -m zipfile --list "$WHEEL"
run_in "$OUT" python3 -m venv "$OUT/venv"
run_in "$OUT" "$OUT/venv/bin/pip" install --no-index --no-deps "$WHEEL"
mkdir -p "$OUT/run-pip"
run_in "$OUT/run-pip" bash -c '. "$0/bin/activate" && command -v ahpspec && ahpspec run --report-dir reports' "$OUT/venv"
badge "$OUT/run-pip/reports"

note ""
note "## crates.io: the package, and \`cargo install --path .\`"
run_in "$ROOT" cargo package --allow-dirty --no-verify --locked --list
note ""
listed() { grep -E "^$1/" "$LAST_LOG" | sed "s#^$1/##" | paste -sd ' ' -; }
note "The package holds $(grep -cvE '^(warning|\s)' "$LAST_LOG") files, among them $(grep -c '^suites/' "$LAST_LOG") suite files"
note "(suites/: $(listed suites)) and $(grep -c '^schemas/' "$LAST_LOG") schema files (schemas/: $(listed schemas))."
run_in "$ROOT" cargo install --locked --path . --root "$OUT/cargo-root"
mkdir -p "$OUT/run-cargo"
run_in "$OUT/run-cargo" "$OUT/cargo-root/bin/ahpspec" run --report-dir reports
badge "$OUT/run-cargo/reports"

note ""
note "All three installs ran \`ahpspec run\` against the built-in host with exit 0."
cp "$OUT/transcript.md" "$REPORT"
echo "check.sh: every install certified the built-in host; transcript in ${REPORT#"$ROOT"/}"
