// Serves the replay Worker on 127.0.0.1:<random>; prints {"url": ...} once ready and stops when
// stdin closes, so the pytest fixture that started it controls its lifetime (ADR-0083).
import { Miniflare } from "miniflare";
import { replayOptions } from "./miniflare_options.mjs";

const d1Persist = process.argv[2] || false;
const mf = new Miniflare(replayOptions({ d1Persist, http: true }));
const url = await mf.ready;
process.stdout.write(JSON.stringify({ url: url.href }) + "\n");

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await mf.dispose();
  process.exit(0);
}
process.stdin.on("end", stop);
process.stdin.on("close", stop);
process.stdin.resume();
process.on("SIGTERM", stop);
