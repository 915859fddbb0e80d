import { describe, expect, it } from "vitest";
import { JOB_ID_PATTERN, parseSearch, searchParams, searchPlaceholder } from "../src/lib/search";

describe("search box (U-20)", () => {
  it("opens the job detail for a well-formed id searched by ID", () => {
    const parsed = parseSearch("id", "  MAIL#0:abc_123-x ");
    expect(parsed).toEqual({ field: "id", value: "MAIL#0:abc_123-x", openJobId: "MAIL#0:abc_123-x" });
    expect(searchParams(parsed)).toEqual({ id: "MAIL#0:abc_123-x" });
  });

  it("filters without opening when the id is malformed", () => {
    for (const text of ["MAIL#x:1", "1MAIL#0:a", "MAIL#0:", "MAIL:0#a", "MAIL#0:a b"]) {
      expect(parseSearch("id", text).openJobId).toBeNull();
    }
  });

  it("never opens a job for the key fields, even if the text looks like an id", () => {
    const parsed = parseSearch("unique_key", "MAIL#0:abc");
    expect(parsed.openJobId).toBeNull();
    expect(searchParams(parsed)).toEqual({ unique_key: "MAIL#0:abc" });
  });

  it("takes the field from a field=value prefix (ADR-0093)", () => {
    expect(parseSearch("id", "uk=order-7")).toMatchObject({ field: "unique_key", value: "order-7" });
    expect(parseSearch("id", "concurrency_key = tenant-1")).toMatchObject({ field: "concurrency_key", value: "tenant-1" });
    expect(parseSearch("unique_key", "ID=Boom#0:q1")).toMatchObject({ field: "id", openJobId: "Boom#0:q1" });
  });

  it("keeps an unknown prefix as part of the value", () => {
    expect(parseSearch("unique_key", "color=red")).toMatchObject({ field: "unique_key", value: "color=red" });
  });

  it("sends nothing for an empty value", () => {
    expect(searchParams(parseSearch("id", "   "))).toEqual({});
  });

  it("names the field in the placeholder", () => {
    expect(searchPlaceholder("id")).toBe("Search by id");
    expect(searchPlaceholder("concurrency_key")).toBe("Search by concurrency key");
  });

  it("matches the A-7 id grammar", () => {
    expect(JOB_ID_PATTERN.test("_B9#12:x")).toBe(true);
    expect(JOB_ID_PATTERN.test("B#-1:x")).toBe(false);
  });
});
