#!/usr/bin/env node
// Runs the native ahpspec binary of this platform. The binary ships in one package per
// platform (@ahpspec/linux-x64, …), each an optional dependency of this one that npm installs
// only where its "os"/"cpu"(/"libc") match — the layout esbuild and biome use. Arguments,
// standard streams and the exit code pass through unchanged. AHPSPEC_BINARY overrides the
// lookup (a locally built binary).
"use strict";

const { spawnSync } = require("child_process");
const path = require("path");

const PLATFORMS = {
  "darwin-arm64": "@ahpspec/darwin-arm64",
  "darwin-x64": "@ahpspec/darwin-x64",
  "linux-arm64": "@ahpspec/linux-arm64",
  "linux-x64": "@ahpspec/linux-x64",
  "win32-x64": "@ahpspec/win32-x64",
};

function binaryPath() {
  if (process.env.AHPSPEC_BINARY) {
    return process.env.AHPSPEC_BINARY;
  }
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORMS[key];
  if (!pkg) {
    fail(`no ahpspec binary is published for ${key}; build it with \`cargo install ahpspec\``);
  }
  const exe = process.platform === "win32" ? "ahpspec.exe" : "ahpspec";
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch (_) {
    fail(
      `the package ${pkg} (the ahpspec binary for ${key}) is not installed; ` +
        `reinstall without --no-optional / --omit=optional`
    );
  }
}

function fail(message) {
  process.stderr.write(`ahpspec: ${message}\n`);
  process.exit(2);
}

const result = spawnSync(binaryPath(), process.argv.slice(2), { stdio: "inherit" });
if (result.error) {
  fail(`cannot run ${path.basename(String(result.error.path || "ahpspec"))}: ${result.error.message}`);
}
if (result.signal) {
  // Die of the same signal, so a shell sees what the binary saw.
  process.kill(process.pid, result.signal);
}
process.exit(result.status === null ? 1 : result.status);
