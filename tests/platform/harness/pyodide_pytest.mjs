// Runs pytest inside Pyodide 0.28.2 (the Workers interpreter, Python 3.13) under Node, offline.
// usage: node --experimental-wasm-stack-switching pyodide_pytest.mjs <wheel-dir> <repo-root> <pytest-args-json>
// Wheels are unpacked from a local directory (never the CDN); the repository is mounted at /repo.
// Miniflare's real D1 and Queue bindings are handed into Python as the module `tsumugi_test_bindings`
// (ADR-0083); the process exits with pytest's exit code after disposing Miniflare.
import fs from "node:fs";
import path from "node:path";
import { loadPyodide } from "pyodide";
import { Miniflare } from "miniflare";
import { replayOptions } from "./miniflare_options.mjs";

const [wheelDir, repoRoot, argsJson] = process.argv.slice(2);
const pytestArgs = JSON.parse(argsJson);
const sitePackages = "/lib/python3.13/site-packages";

const py = await loadPyodide();
for (const name of fs.readdirSync(wheelDir).filter((f) => f.endsWith(".whl")).sort()) {
  const bytes = new Uint8Array(fs.readFileSync(path.join(wheelDir, name))); // a Buffer is refused
  py.unpackArchive(bytes, "wheel", { extractDir: sitePackages });
}
py.FS.mkdirTree("/repo");
py.FS.mount(py.FS.filesystems.NODEFS, { root: repoRoot }, "/repo");

const mf = new Miniflare(replayOptions({ d1Persist: false, http: false }));
await mf.ready;
let code = 1;
try {
  py.registerJsModule("tsumugi_test_bindings", {
    TSUMUGI_DB: await mf.getD1Database("TSUMUGI_DB"),
    TSUMUGI_QUEUE: await mf.getQueueProducer("TSUMUGI_QUEUE"),
  });
  py.runPython(`
import os, sys
sys.path.insert(0, "/repo/src")
sys.path.insert(0, "/repo")
sys.path.insert(0, "/repo/tests/platform/harness")
os.chdir("/repo")
`);
  // callPromising enters Python with JSPI enabled, so run_sync (pyodide_pytest_plugin.py) can suspend
  // a test on JS promises (D1, Queues).
  const pytest = py.pyimport("pytest");
  code = Number(await pytest.main.callPromising(py.toPy(pytestArgs)));
} finally {
  await mf.dispose();
}
process.exit(code);
