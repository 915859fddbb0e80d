import { afterEach, describe, expect, it, vi } from "vitest";
import { ApiError, auth, getJson, idPath, loadError, mutate, mutationMessage } from "../src/lib/api";

function answer(status: number, body: unknown): void {
  vi.stubGlobal(
    "fetch",
    vi.fn(async () => new Response(body === undefined ? "" : JSON.stringify(body), { status })),
  );
}

afterEach(() => {
  vi.unstubAllGlobals();
  auth.unauthorized = false;
});

describe("REST access (U-4, U-6)", () => {
  it("calls same-origin paths with cookies and no Authorization header", async () => {
    answer(200, { jobs: [], total: 0 });
    await getJson("/api/jobs?limit=20");
    const [path, init] = vi.mocked(fetch).mock.calls[0] as [string, RequestInit];
    expect(path).toBe("/api/jobs?limit=20");
    expect(init.credentials).toBe("same-origin");
    expect(JSON.stringify(init.headers ?? {})).not.toMatch(/authorization/i);
  });

  it("enters the unauthorized state on 401 and leaves it on the next success", async () => {
    answer(401, { error: "unauthorized" });
    await expect(getJson("/api/jobs")).rejects.toBeInstanceOf(ApiError);
    expect(auth.unauthorized).toBe(true);
    answer(200, {});
    await getJson("/api/jobs");
    expect(auth.unauthorized).toBe(false);
  });

  it("encodes the whole id, so # travels as %23 (A-9)", () => {
    expect(idPath("/api/jobs", "Boom#0:abc", "/retry")).toBe("/api/jobs/Boom%230%3Aabc/retry");
  });
});

describe("mutation messages (U-25)", () => {
  it("says Accepted, or Cancellation requested for a running job (J-135)", async () => {
    answer(200, { ok: true });
    expect(await mutate("/api/jobs/x/retry")).toEqual({ message: "Accepted", status: 200 });
    answer(200, { ok: true, requested: true });
    expect((await mutate("/api/jobs/x/cancel")).message).toBe("Cancellation requested");
  });

  it("shows the server's error text, or the status when there is no body", async () => {
    answer(410, { ok: false, error: "job is no longer available: removed from the coordinator after the retention period" });
    expect(await mutate("/api/jobs/x/retry")).toEqual({
      message: "job is no longer available: removed from the coordinator after the retention period",
      status: 410,
    });
    answer(500, undefined);
    expect((await mutate("/api/jobs/x/retry")).message).toBe("Request failed (500)");
  });

  it("says Request failed on a network error", async () => {
    vi.stubGlobal("fetch", vi.fn(async () => Promise.reject(new TypeError("offline"))));
    expect(await mutate("/api/jobs/x/retry")).toEqual({ message: "Request failed", status: 0 });
    expect(mutationMessage(new Error("x"))).toBe("Request failed");
  });

  it("prefixes load errors (U-12)", () => {
    expect(loadError(new ApiError(503, "database temporarily unavailable", null))).toBe(
      "Failed to load: database temporarily unavailable",
    );
  });
});
