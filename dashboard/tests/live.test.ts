import { describe, expect, it } from "vitest";
import { notFoundGrace } from "../src/lib/live";

const notFound = { status: 404 };
const isNotFound = (e: unknown): boolean => (e as { status?: number }).status === 404;

describe("detail views wait out a 404 for a just-created object (ADR-0119, F-84)", () => {
  it("polls again on 404 for the given number of tries, then reports it", () => {
    const grace = notFoundGrace(2, isNotFound);
    expect(grace.waitsOut(notFound)).toBe(true);
    expect(grace.waitsOut(notFound)).toBe(true);
    expect(grace.waitsOut(notFound)).toBe(false);
  });

  it("reports other errors at once", () => {
    const grace = notFoundGrace(5, isNotFound);
    expect(grace.waitsOut({ status: 500 })).toBe(false);
    expect(grace.waitsOut(new Error("network"))).toBe(false);
  });

  it("reports a 404 at once after the object was seen: it was swept or deleted", () => {
    const grace = notFoundGrace(5, isNotFound);
    grace.seen();
    expect(grace.waitsOut(notFound)).toBe(false);
  });
});
