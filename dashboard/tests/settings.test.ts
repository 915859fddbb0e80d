import { describe, expect, it } from "vitest";
import { parseColumns, parseRefresh, readSetting, tokenCookieString, writeSetting } from "../src/lib/settings";

describe("refresh setting (U-13)", () => {
  it("falls back to 3 s for missing, empty or unlisted values", () => {
    expect(parseRefresh(null)).toBe(3000);
    expect(parseRefresh("")).toBe(3000);
    expect(parseRefresh("1234")).toBe(3000);
    expect(parseRefresh("0")).toBe(0);
    expect(parseRefresh("60000")).toBe(60000);
  });

  it("ignores storage failures", () => {
    const broken = {
      getItem: () => {
        throw new Error("denied");
      },
      setItem: () => {
        throw new Error("quota");
      },
    };
    expect(readSetting(broken, "k")).toBeNull();
    expect(() => writeSetting(broken, "k", "v")).not.toThrow();
  });
});

describe("column toggles (U-23)", () => {
  it("defaults missing keys to visible and honours stored booleans", () => {
    expect(parseColumns('{"id":false,"attempts":"no"}')).toEqual({
      id: false,
      startedAt: true,
      updatedAt: true,
      attempts: true,
      processingTime: true,
    });
  });

  it("shows every column when the stored value is unparsable", () => {
    expect(Object.values(parseColumns("{nope")).every(Boolean)).toBe(true);
    expect(Object.values(parseColumns("[false]")).every(Boolean)).toBe(true);
  });
});

describe("token cookie (U-7)", () => {
  it("is a strict session cookie holding the encoded token", () => {
    expect(tokenCookieString("tsumugi_token", "a b/c")).toBe("tsumugi_token=a%20b%2Fc; path=/; SameSite=Strict");
  });
});
