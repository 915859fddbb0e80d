// A Worker whose Durable Object runs SQL statements on real Durable Object SQLite (workerd),
// plus D1 and Queue endpoints, for the platform proofs in tests/platform (ADR-0083).
import { DurableObject } from "cloudflare:workers";

// Values cross the loopback JSON boundary tagged when JSON cannot hold them: BLOBs as base64.
function decodeParam(value) {
  if (value && typeof value === "object" && "$blob" in value) {
    return Uint8Array.from(atob(value.$blob), (c) => c.charCodeAt(0));
  }
  return value;
}

function encodeCell(value) {
  if (value instanceof ArrayBuffer) {
    return { $blob: btoa(String.fromCharCode(...new Uint8Array(value))) };
  }
  if (typeof value === "number" && !Number.isFinite(value)) return { $num: String(value) };
  return value;
}

function errorText(e) {
  return String(e && e.message !== undefined ? e.message : e);
}

export class SqlReplay extends DurableObject {
  // POST {groups: [{transaction, rollback, stmts: [{sql, params}]}]} -> {results: [[...], ...]}
  async fetch(request) {
    const { groups } = await request.json();
    const results = [];
    for (const group of groups) results.push(this.runGroup(group));
    return Response.json({ results, databaseSize: this.ctx.storage.sql.databaseSize });
  }

  runGroup(group) {
    const out = [];
    if (!group.transaction) {
      for (const st of group.stmts) out.push(this.runOne(st));
      return out;
    }
    try {
      this.ctx.storage.transactionSync(() => {
        for (const st of group.stmts) out.push(this.runOne(st));
        if (group.rollback) throw new Error("tsumugi-replay-rollback");
      });
    } catch (e) {
      if (errorText(e) !== "tsumugi-replay-rollback") out.push({ ok: false, error: errorText(e) });
    }
    return out;
  }

  runOne(st) {
    try {
      const cursor = this.ctx.storage.sql.exec(st.sql, ...(st.params || []).map(decodeParam));
      const rows = cursor.raw().toArray().map((row) => row.map(encodeCell));
      return { ok: true, rows, rowsRead: cursor.rowsRead, rowsWritten: cursor.rowsWritten };
    } catch (e) {
      return { ok: false, error: errorText(e) };
    }
  }
}

async function d1Exec(env, body) {
  const out = [];
  for (const st of body.stmts) {
    try {
      const res = await env.TSUMUGI_DB.prepare(st.sql).bind(...(st.params || []).map(decodeParam)).all();
      out.push({ ok: true, rows: res.results, meta: res.meta });
    } catch (e) {
      out.push({ ok: false, error: errorText(e) });
    }
  }
  return out;
}

async function d1Batch(env, body) {
  try {
    const statements = body.stmts.map((st) =>
      env.TSUMUGI_DB.prepare(st.sql).bind(...(st.params || []).map(decodeParam)),
    );
    const results = await env.TSUMUGI_DB.batch(statements);
    return { ok: true, results: results.map((r) => ({ rows: r.results, meta: r.meta })) };
  } catch (e) {
    return { ok: false, error: errorText(e) };
  }
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const parts = url.pathname.split("/").filter(Boolean);
    if (parts[0] === "do" && parts.length === 2) {
      const stub = env.SQL_REPLAY.get(env.SQL_REPLAY.idFromName(decodeURIComponent(parts[1])));
      return stub.fetch("http://do/exec", { method: "POST", body: await request.text() });
    }
    if (parts[0] === "d1" && parts[1] === "batch") return Response.json(await d1Batch(env, await request.json()));
    if (parts[0] === "d1") return Response.json({ results: await d1Exec(env, await request.json()) });
    if (parts[0] === "health") return Response.json({ ok: true });
    return new Response("not found", { status: 404 });
  },

  // Records every delivered body in D1 so a test can read back what the producer sent.
  async queue(batch, env) {
    for (const message of batch.messages) {
      await env.TSUMUGI_DB.prepare(
        "CREATE TABLE IF NOT EXISTS queue_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL, attempts INTEGER NOT NULL)",
      ).run();
      await env.TSUMUGI_DB.prepare("INSERT INTO queue_log (body, attempts) VALUES (?, ?)")
        .bind(JSON.stringify(message.body), message.attempts)
        .run();
      message.ack();
    }
  },
};
