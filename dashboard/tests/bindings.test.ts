import { describe, expect, it } from "vitest";
import { blockedReasons, concurrencyBody, isPaused, policyFromResponse } from "../src/lib/bindings";
import { chartBars } from "../src/lib/metrics";

const diag = (blocked: Record<string, boolean>, paused?: boolean) => ({
  active: 1,
  outbox: 0,
  paused,
  blocked: { capacity: false, tokens: false, perKey: false, ...blocked },
});

describe("bindings tab (A-55, J-176)", () => {
  it("names the limits that stopped the last tick", () => {
    expect(blockedReasons(diag({}))).toEqual([]);
    expect(blockedReasons(diag({ capacity: true, perKey: true }))).toEqual(["capacity", "per key"]);
    expect(blockedReasons(diag({ tokens: true }, true))).toEqual(["paused", "rate"]);
    expect(blockedReasons(diag({}), { paused: true })).toEqual(["paused"]);
  });

  it("knows a pause from diagnostics or from the last policy answer", () => {
    expect(isPaused(diag({ paused: true }), undefined)).toBe(true);
    expect(isPaused(diag({}), { paused: true })).toBe(true);
    expect(isPaused(diag({}), undefined)).toBe(false);
  });

  it("reads the resulting settings wherever the answer puts them", () => {
    const answer = { ok: true, settings: { policy: { paused: true, concurrency: 5 }, sweepAfterMs: 1 }, shards: 1 };
    expect(policyFromResponse(answer)).toEqual({ paused: true, concurrency: 5 });
    expect(policyFromResponse({ policy: { paused: true, concurrency: 5 }, shards: 1 })).toEqual({ paused: true, concurrency: 5 });
    expect(policyFromResponse({ settings: { concurrency: 2 } })).toEqual({ concurrency: 2 });
    expect(policyFromResponse({ paused: false })).toEqual({ paused: false });
    expect(policyFromResponse(null)).toEqual({});
  });

  it("accepts whole, non-negative concurrency only", () => {
    expect(concurrencyBody("0")).toEqual({ body: { concurrency: 0 } });
    expect(concurrencyBody(12)).toEqual({ body: { concurrency: 12 } }); // a number input's value, as v-model gives it
    expect(concurrencyBody(-1)).toHaveProperty("error");
    expect(concurrencyBody("2.5")).toHaveProperty("error");
    expect(concurrencyBody("-1")).toHaveProperty("error");
    expect(concurrencyBody("")).toHaveProperty("error");
  });
});

describe("metrics chart (U-41)", () => {
  it("scales bars to the busiest hour and draws the failed share inside", () => {
    const bars = chartBars([
      { at: 0, total: 10, failed: 5, avgDurationMs: 1 },
      { at: 1, total: 5, failed: 0, avgDurationMs: 1 },
      { at: 2, total: 0, failed: 0, avgDurationMs: 0 },
    ]);
    expect(bars.map((b) => [b.height, b.failedShare])).toEqual([
      [1, 0.5],
      [0.5, 0],
      [0, 0],
    ]);
  });
});
