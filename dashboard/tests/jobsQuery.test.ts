import { describe, expect, it } from "vitest";
import {
  clampPage,
  createdBounds,
  hasActiveFilters,
  INITIAL_SORT,
  type JobsQuery,
  jobsQueryParams,
  keepVisibleSelection,
  pageCount,
  rangeLabel,
  sortIcon,
  toggleAll,
  toggleSort,
} from "../src/lib/jobsQuery";
import { parseSearch } from "../src/lib/search";

function query(overrides: Partial<JobsQuery> = {}): JobsQuery {
  return {
    state: "",
    binding: "",
    search: parseSearch("id", ""),
    created: { from: "", to: "" },
    sort: INITIAL_SORT,
    page: 0,
    pageSize: 20,
    ...overrides,
  };
}

describe("sorting (U-18)", () => {
  it("starts at updated_at descending", () => {
    expect(INITIAL_SORT).toEqual({ column: "updated_at", order: "desc" });
  });

  it("flips the current column and starts another descending", () => {
    const asc = toggleSort(INITIAL_SORT, "updated_at");
    expect(asc).toEqual({ column: "updated_at", order: "asc" });
    expect(toggleSort(asc, "updated_at")).toEqual({ column: "updated_at", order: "desc" });
    expect(toggleSort(asc, "binding")).toEqual({ column: "binding", order: "desc" });
  });

  it("shows a faint double arrow on inactive columns", () => {
    expect(sortIcon(INITIAL_SORT, "state")).toBe("none");
    expect(sortIcon(INITIAL_SORT, "updated_at")).toBe("down");
    expect(sortIcon({ column: "state", order: "asc" }, "state")).toBe("up");
  });
});

describe("paging (U-22)", () => {
  it("has at least one page", () => {
    expect(pageCount(0, 20)).toBe(1);
    expect(pageCount(20, 20)).toBe(1);
    expect(pageCount(21, 20)).toBe(2);
  });

  it("clamps a page after the total shrank", () => {
    expect(clampPage(5, 41, 20)).toBe(2);
    expect(clampPage(-1, 41, 20)).toBe(0);
    expect(clampPage(1, 0, 20)).toBe(0);
  });
});

describe("query (U-15)", () => {
  it("sends sort, order and paging, and only the filters that are set", () => {
    const params = jobsQueryParams(query({ page: 2, pageSize: 30 }));
    expect(Object.fromEntries(params)).toEqual({ sort: "updated_at", order: "desc", limit: "30", offset: "60" });
  });

  it("sends state, binding and the active search field", () => {
    const params = jobsQueryParams(query({ state: "FAILED", binding: "Boom", search: parseSearch("unique_key", "k1") }));
    expect(params.get("state")).toBe("FAILED");
    expect(params.get("binding")).toBe("Boom");
    expect(params.get("unique_key")).toBe("k1");
    expect(params.has("id")).toBe(false);
  });

  it("turns the created range into local-day bounds (U-19)", () => {
    const bounds = createdBounds({ from: "2026-03-04", to: "2026-03-05" });
    expect(Number(bounds.created_from)).toBe(new Date(2026, 2, 4, 0, 0, 0, 0).getTime());
    expect(Number(bounds.created_to)).toBe(new Date(2026, 2, 5, 23, 59, 59, 999).getTime());
    expect(createdBounds({ from: "", to: "garbage" })).toEqual({});
  });

  it("labels an open side of the range with an ellipsis", () => {
    expect(rangeLabel({ from: "2026-03-04", to: "" })).toBe("2026-03-04 - …");
    expect(rangeLabel({ from: "", to: "" })).toBe("");
  });

  it("knows when Reset is offered", () => {
    expect(hasActiveFilters(query())).toBe(false);
    expect(hasActiveFilters(query({ created: { from: "", to: "2026-01-01" } }))).toBe(true);
    expect(hasActiveFilters(query({ sort: { column: "state", order: "asc" } }))).toBe(false);
  });
});

describe("selection (U-26)", () => {
  it("drops ids that left the page", () => {
    expect(keepVisibleSelection(["a", "b", "c"], ["c", "a"])).toEqual(["a", "c"]);
  });

  it("selects the page, or clears when everything is selected", () => {
    expect(toggleAll(["a"], ["a", "b"])).toEqual(["a", "b"]);
    expect(toggleAll(["a", "b"], ["a", "b"])).toEqual([]);
    expect(toggleAll([], [])).toEqual([]);
  });
});

describe("bulk over the filters (ADR-0151)", () => {
  it("sends the list's filters without paging", async () => {
    const { bulkFilter, bulkPercent } = await import("../src/lib/jobsQuery");
    const query = {
      state: "FAILED",
      binding: "Boom",
      search: { field: "unique_key", value: "u1", openJobId: null },
      created: { from: "", to: "" },
      sort: { column: "updated_at", order: "desc" },
      page: 3,
      pageSize: 20,
    } as Parameters<typeof bulkFilter>[0];
    expect(bulkFilter(query)).toEqual({ state: "FAILED", binding: "Boom", unique_key: "u1" });
    expect([bulkPercent(0, 0, 0), bulkPercent(1, 1, 4), bulkPercent(5, 0, 4)]).toEqual([100, 50, 100]);
  });
});
