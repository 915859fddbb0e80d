import { describe, expect, it } from "vitest";
import {
  fireDelay,
  formatDurationMs,
  formatInterval,
  formatPercent,
  formatTime,
  prettyJson,
  processingTime,
  progressPercent,
} from "../src/lib/format";

describe("formatting", () => {
  it("formats schedule intervals with one decimal and no trailing .0 (U-40)", () => {
    expect(formatInterval(300_000)).toBe("5m");
    expect(formatInterval(5_400_000)).toBe("1.5h");
    expect(formatInterval(3_600_000)).toBe("1h");
    expect(formatInterval(1_500)).toBe("1.5s");
    expect(formatInterval(59_999)).toBe("60s");
  });

  it("formats durations as ms below a second and seconds above (U-41)", () => {
    expect(formatDurationMs(999)).toBe("999 ms");
    expect(formatDurationMs(1000)).toBe("1.0 s");
    expect(formatDurationMs(12_345)).toBe("12.3 s");
    expect(formatDurationMs(null)).toBe("-");
  });

  it("shows processing time only when dispatched and positive (U-16)", () => {
    expect(processingTime(null, 10)).toBe("");
    expect(processingTime(10, 10)).toBe("");
    expect(processingTime(10, 250)).toBe("240 ms");
  });

  it("formats rates and progress", () => {
    expect(formatPercent(0.1234)).toBe("12.3%");
    expect(formatPercent(0)).toBe("0.0%");
    expect(progressPercent(0.456)).toBe(46);
    expect(progressPercent(7)).toBe(100);
  });

  it("pretty-prints JSON text and keeps anything else raw (A-11, U-28)", () => {
    expect(prettyJson('{"to":"a"}')).toBe('{\n  "to": "a"\n}');
    expect(prettyJson("not json")).toBe("not json");
    expect(prettyJson(null)).toBe("-");
  });

  it("shows a firing delay only when the schedule fired late (U-40)", () => {
    expect(fireDelay(1000, 1000)).toBe("");
    expect(fireDelay(1000, 4000)).toBe("+3s");
    expect(fireDelay(null, 4000)).toBe("");
  });

  it("uses '-' for missing dates (U-28)", () => {
    expect(formatTime(null)).toBe("-");
    expect(formatTime(0, "en-US")).toBe(new Date(0).toLocaleString("en-US"));
  });
});
