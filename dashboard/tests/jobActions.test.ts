import { describe, expect, it } from "vitest";
import { anyEnabled, bulkMessage, GONE_REASON, jobActions, newJobBody, newRunBody, rescheduleBody } from "../src/lib/jobActions";

describe("row actions (U-25)", () => {
  it("offers retry for retryable failures only", () => {
    expect(jobActions({ state: "FAILED", retryable: true }, false, false).retry.enabled).toBe(true);
    const old = jobActions({ state: "FAILED", retryable: false }, false, false);
    expect(old.retry).toEqual({ enabled: false, reason: GONE_REASON });
    expect(jobActions({ state: "FAILED", retryable: true }, true, false).retry.reason).toBe(GONE_REASON);
  });

  it("cancels scheduled, queued and running jobs (J-135) and reschedules scheduled ones (A-47)", () => {
    const running = jobActions({ state: "RUNNING", retryable: false }, false, false);
    expect(running.cancel.enabled).toBe(true);
    expect(running.reschedule.enabled).toBe(false);
    const scheduled = jobActions({ state: "SCHEDULED", retryable: false }, false, false);
    expect(scheduled.reschedule.enabled).toBe(true);
    const done = jobActions({ state: "COMPLETED", retryable: false }, false, false);
    expect(anyEnabled(done)).toBe(false);
  });

  it("disables everything while busy", () => {
    expect(anyEnabled(jobActions({ state: "SCHEDULED", retryable: true }, false, true))).toBe(false);
  });

  it("reports bulk outcomes (U-27)", () => {
    expect(bulkMessage(3, 0)).toBe("3 accepted");
    expect(bulkMessage(1, 2)).toBe("1 accepted, 2 refused");
  });
});

describe("reschedule body (A-46)", () => {
  it("sends a delay or an absolute time, plus an optional priority", () => {
    expect(rescheduleBody({ mode: "delay", delayMs: "5000", runAtLocal: "", priority: "" })).toEqual({ body: { delayMs: 5000 } });
    const at = rescheduleBody({ mode: "at", delayMs: "", runAtLocal: "2026-01-02T03:04:05", priority: "7" });
    expect(at).toEqual({ body: { runAt: new Date("2026-01-02T03:04:05").getTime(), priority: 7 } });
  });

  it("refuses a negative delay or an empty time", () => {
    expect(rescheduleBody({ mode: "delay", delayMs: "-1", runAtLocal: "", priority: "" })).toHaveProperty("error");
    // v-model hands a number input over as a number once it parses
    expect(rescheduleBody({ mode: "delay", delayMs: 0, runAtLocal: "", priority: 9 })).toEqual({ body: { delayMs: 0, priority: 9 } });
    expect(rescheduleBody({ mode: "delay", delayMs: -5, runAtLocal: "", priority: "" })).toHaveProperty("error");
    expect(rescheduleBody({ mode: "at", delayMs: "", runAtLocal: "", priority: "" })).toHaveProperty("error");
  });
});

describe("new job and run bodies (U-32, U-33)", () => {
  const form = { binding: "Boom", payload: "{}", maxAttempts: "", delayMs: "", priority: "", uniqueKey: "", concurrencyKey: "", debounceKey: "", debounceMs: "", debounceMaxMs: "" };

  it("sends only filled fields", () => {
    expect(newJobBody(form)).toEqual({ body: { binding: "Boom", payload: {} } });
    expect(newJobBody({ ...form, maxAttempts: "2", uniqueKey: "u" })).toEqual({
      body: { binding: "Boom", payload: {}, maxAttempts: 2, uniqueKey: "u" },
    });
    // number inputs reach the form as numbers once they parse (Vue's v-model)
    expect(newJobBody({ ...form, maxAttempts: 4, delayMs: 0, debounceKey: "k", debounceMs: 250 })).toEqual({
      body: { binding: "Boom", payload: {}, maxAttempts: 4, delayMs: 0, debounceKey: "k", debounceMs: 250 },
    });
  });

  it("sends the debounce options (ADR-0149)", () => {
    expect(newJobBody({ ...form, debounceKey: "doc:7", debounceMs: "5000", debounceMaxMs: "" })).toEqual({
      body: { binding: "Boom", payload: {}, debounceKey: "doc:7", debounceMs: 5000 },
    });
  });

  it("catches invalid JSON before the request", () => {
    expect(newJobBody({ ...form, payload: "{" })).toEqual({ error: "Payload must be valid JSON" });
    expect(newRunBody("F", "{", "")).toEqual({ error: "Input must be valid JSON" });
  });

  it("omits an empty run id so the server generates one", () => {
    expect(newRunBody("GREETINGS", '{"prefix":"hi"}', " ")).toEqual({ body: { flow: "GREETINGS", input: { prefix: "hi" } } });
    expect(newRunBody("GREETINGS", "null", "r1")).toEqual({ body: { flow: "GREETINGS", input: null, id: "r1" } });
  });
});
