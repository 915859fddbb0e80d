import { describe, expect, it } from "vitest";
import { laneXs, layoutGraph, orthogonalPath } from "../src/lib/layout";

const box = (id: string, height = 100) => ({ id, width: 256, height });

describe("dagre adapter (U-36)", () => {
  it("lays ranks out left to right with 80 px between them and 16 px margins", () => {
    const { positions } = layoutGraph(
      [box("list"), box("greet"), box("report")],
      [
        { id: "list->greet", source: "list", target: "greet" },
        { id: "greet->report", source: "greet", target: "report" },
      ],
    );
    const list = positions.get("list")!;
    const greet = positions.get("greet")!;
    const report = positions.get("report")!;
    expect(list.x).toBe(16);
    expect(greet.x - (list.x + 256)).toBe(80);
    expect(report.x - (greet.x + 256)).toBe(80);
    expect(list.y).toBe(greet.y);
  });

  it("separates nodes of one rank by at least 32 px", () => {
    const { positions } = layoutGraph(
      [box("a"), box("b", 60), box("c", 60)],
      [
        { id: "a->b", source: "a", target: "b" },
        { id: "a->c", source: "a", target: "c" },
      ],
    );
    const [upper, lower] = [positions.get("b")!, positions.get("c")!].sort((p, q) => p.y - q.y);
    expect(lower.y - (upper.y + 60)).toBeGreaterThanOrEqual(32);
    expect(positions.get("b")!.x).toBe(positions.get("c")!.x);
  });

  it("spreads edges that share a gap evenly across it", () => {
    const positions = new Map([
      ["a", { x: 0, y: 0 }],
      ["b", { x: 0, y: 200 }],
      ["t", { x: 336, y: 100 }],
    ]);
    const lanes = laneXs(
      [box("a"), box("b"), box("t")],
      positions,
      [
        { id: "b->t", source: "b", target: "t" },
        { id: "a->t", source: "a", target: "t" },
      ],
    );
    // The gap is [256, 336]; two edges split it in thirds, the upper source taking the first lane.
    expect(lanes.get("a->t")).toBeCloseTo(256 + 80 / 3);
    expect(lanes.get("b->t")).toBeCloseTo(256 + (2 * 80) / 3);
  });
});

describe("orthogonal edges (U-36)", () => {
  it("is a straight line when both ends are level", () => {
    expect(orthogonalPath({ x: 0, y: 34 }, { x: 100, y: 34 }, 50)).toBe("M 0 34 L 100 34");
  });

  it("turns at the lane with corners of radius 8", () => {
    expect(orthogonalPath({ x: 0, y: 0 }, { x: 100, y: 50 }, 40)).toBe(
      "M 0 0 L 32 0 Q 40 0 40 8 L 40 42 Q 40 50 48 50 L 100 50",
    );
  });

  it("shrinks the radius for small steps and falls back to the middle for a lane outside the span", () => {
    expect(orthogonalPath({ x: 0, y: 0 }, { x: 100, y: -6 }, 500)).toBe(
      "M 0 0 L 47 0 Q 50 0 50 -3 L 50 -3 Q 50 -6 53 -6 L 100 -6",
    );
  });
});
