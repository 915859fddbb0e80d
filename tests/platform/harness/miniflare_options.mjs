// The Miniflare configuration shared by the loopback server and the Pyodide runner (ADR-0083).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Log, LogLevel } from "miniflare";

const here = path.dirname(fileURLToPath(import.meta.url));

export function replayOptions({ d1Persist, http }) {
  return {
    modules: true,
    scriptPath: path.join(here, "replay_worker.mjs"),
    compatibilityDate: "2026-04-01",
    cf: false, // never fetch Request.cf from workers.cloudflare.com (PLATFORM.md)
    durableObjects: { SQL_REPLAY: { className: "SqlReplay", useSQLite: true } },
    d1Databases: { TSUMUGI_DB: "00000000-0000-0000-0000-000000000000" },
    d1Persist: d1Persist || false,
    queueProducers: { TSUMUGI_QUEUE: { queueName: "tsumugi-queue" } },
    queueConsumers: { "tsumugi-queue": { maxBatchSize: 10, maxBatchTimeout: 0.05, maxRetries: 0 } },
    log: new Log(LogLevel.WARN),
    ...(http ? { host: "127.0.0.1", port: 0 } : {}),
  };
}
