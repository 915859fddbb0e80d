import { describe, expect, it } from "vitest";
import { attention, buildCards, cardHeight, cardWidth, CARD_BASE_HEIGHT, CARD_WIDTH, chipColumns, graphEdges, hiddenSummary, MAX_CHIPS, nodeIdsKey } from "../src/lib/graph";
import type { RunNode } from "../src/lib/types";

let position = 0;
function node(id: string, extra: Partial<RunNode> = {}): RunNode {
  position += 1;
  return {
    id,
    binding: "B",
    state: "PENDING",
    container: false,
    parent: null,
    origin: "static",
    after: [],
    job_id: null,
    child_run_id: null,
    result: null,
    error: null,
    position,
    created_at: 0,
    updated_at: 0,
    ...extra,
  };
}

describe("edges (U-36)", () => {
  it("draws one edge per after entry between top-level nodes, without self-loops or duplicates", () => {
    const nodes = [
      node("list"),
      node("greet", { container: true, after: ["list", "list", "greet", "missing"] }),
      node("greet:0", { parent: "greet", origin: "fanOut", after: ["list"] }),
      node("report", { after: ["greet", "greet:0"] }),
    ];
    expect(graphEdges(nodes)).toEqual([
      { id: "list->greet", source: "list", target: "greet" },
      { id: "greet->report", source: "greet", target: "report" },
    ]);
  });
});

describe("chips (U-37)", () => {
  it("orders by attention, then position", () => {
    expect(attention("FAILED")).toBeLessThan(attention("STALLED"));
    expect(attention("CANCELLED")).toBe(attention("SKIPPED"));
    expect(attention("WEIRD")).toBe(attention("PENDING"));
    expect(attention("COMPLETED")).toBeGreaterThan(attention("QUEUED"));
  });

  it("uses min(4, ceil(sqrt(n))) columns", () => {
    expect([0, 1, 2, 4, 5, 9, 10, 24].map(chipColumns)).toEqual([0, 1, 2, 2, 3, 3, 4, 4]);
  });

  it("puts children into their parent's card, failures first, labels without the parent prefix", () => {
    const nodes = [
      node("greet", { container: true, state: "RUNNING" }),
      node("greet:0", { parent: "greet", state: "COMPLETED", job_id: "Greet#0:a" }),
      node("greet:1", { parent: "greet", state: "FAILED", error: "boom" }),
      node("greet:1:x", { parent: "greet:1", origin: "spawn" }),
    ];
    const [card] = buildCards(nodes);
    expect(card.node.id).toBe("greet");
    expect(card.chips.map((c) => [c.label, c.state, c.descendants])).toEqual([
      ["1", "FAILED", 1],
      ["0", "COMPLETED", 0],
    ]);
    expect(card.childTotal).toBe(2);
    expect(card.childCompleted).toBe(1);
    expect(card.hiddenSummary).toBe("");
    expect(card.height).toBe(cardHeight(2, false));
  });

  it("shows at most 24 chips and summarises the rest by state", () => {
    const nodes = [node("fan", { container: true })];
    for (let i = 0; i < 30; i += 1) {
      nodes.push(node(`fan:${i}`, { parent: "fan", state: i < 3 ? "RUNNING" : "COMPLETED" }));
    }
    const [card] = buildCards(nodes);
    expect(card.chips).toHaveLength(MAX_CHIPS);
    expect(card.chips.slice(0, 3).every((c) => c.state === "RUNNING")).toBe(true);
    expect(card.hiddenSummary).toBe("COMPLETED 6 (+6 hidden)");
    expect(card.height).toBeGreaterThan(cardHeight(MAX_CHIPS, false));
  });

  it("summarises states in attention order, then alphabetically", () => {
    const hidden = [node("a", { state: "PENDING" }), node("b", { state: "QUEUED" }), node("c", { state: "FAILED" }), node("d", { state: "QUEUED" })];
    expect(hiddenSummary(hidden)).toBe("FAILED 1 / PENDING 1 / QUEUED 2 (+4 hidden)");
  });

  it("gives a card without children the base size and widens it for a wide chip grid", () => {
    expect(cardHeight(0, false)).toBe(CARD_BASE_HEIGHT);
    expect(cardWidth(0)).toBe(CARD_WIDTH);
    expect(cardWidth(1)).toBe(CARD_WIDTH);
    expect(cardWidth(4)).toBe(4 * 132 + 3 * 6 + 22);
  });
});

describe("refit key (U-38)", () => {
  it("changes with the set of ids, not with states", () => {
    const a = [node("x"), node("y")];
    const b = [node("y", { state: "COMPLETED" }), node("x")];
    expect(nodeIdsKey(a)).toBe(nodeIdsKey(b));
    expect(nodeIdsKey([...a, node("z")])).not.toBe(nodeIdsKey(a));
  });
});
