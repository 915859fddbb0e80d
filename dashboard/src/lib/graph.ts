// The run graph model (U-36, U-37): which nodes become cards, which edges join them, and which
// runtime children are drawn as chips inside their parent's card.
import type { RunNode } from "./types";

export const CARD_WIDTH = 256;
export const CARD_BASE_HEIGHT = 112;
export const HANDLE_TOP = 34; // U-36: edges attach 34 px below the card top
export const CHIP_WIDTH = 132;
export const CHIP_HEIGHT = 26;
export const CHIP_GAP = 6;
export const MAX_CHIPS = 24;
const SUMMARY_HEIGHT = 20;
const CHIP_PADDING = 8;
const CARD_INSET_X = 22; // 10 px padding and 1 px border on each side

// U-37: what needs a look first comes first.
const ATTENTION: Record<string, number> = {
  FAILED: 0,
  STALLED: 1,
  RUNNING: 2,
  CANCELLED: 3,
  SKIPPED: 3,
  QUEUED: 4,
  SCHEDULED: 4,
  PENDING: 4,
  COMPLETED: 5,
};
const UNKNOWN_ATTENTION = 4;

export function attention(state: string): number {
  return ATTENTION[state] ?? UNKNOWN_ATTENTION;
}

export interface Chip {
  id: string;
  label: string;
  state: string;
  error: string | null;
  jobId: string | null;
  descendants: number;
}

export interface Card {
  node: RunNode;
  chips: Chip[];
  chipColumns: number;
  childTotal: number;
  childCompleted: number;
  hiddenSummary: string;
  width: number;
  height: number;
}

export interface GraphEdge {
  id: string;
  source: string;
  target: string;
}

function byPosition(a: RunNode, b: RunNode): number {
  return a.position - b.position;
}

/** U-36: one edge per `after` entry naming another top-level node; no self-loops, no duplicates. */
export function graphEdges(nodes: readonly RunNode[]): GraphEdge[] {
  const top = new Set(nodes.filter((n) => n.parent === null).map((n) => n.id));
  const edges: GraphEdge[] = [];
  const seen = new Set<string>();
  for (const node of nodes) {
    if (node.parent !== null) continue;
    for (const dep of node.after) {
      const id = `${dep}->${node.id}`;
      if (dep === node.id || !top.has(dep) || seen.has(id)) continue;
      seen.add(id);
      edges.push({ id, source: dep, target: node.id });
    }
  }
  return edges;
}

/** U-37: columns = min(4, ceil(sqrt(n))). */
export function chipColumns(count: number): number {
  return count === 0 ? 0 : Math.min(4, Math.ceil(Math.sqrt(count)));
}

/** U-37: hidden children as `STATE n / STATE m (+k hidden)`, attention order then alphabetical. */
export function hiddenSummary(hidden: readonly RunNode[]): string {
  if (hidden.length === 0) return "";
  const counts = new Map<string, number>();
  for (const child of hidden) counts.set(child.state, (counts.get(child.state) ?? 0) + 1);
  const states = [...counts.keys()].sort(
    (a, b) => attention(a) - attention(b) || (a < b ? -1 : a > b ? 1 : 0),
  );
  return `${states.map((s) => `${s} ${counts.get(s)}`).join(" / ")} (+${hidden.length} hidden)`;
}

function descendantCounts(nodes: readonly RunNode[]): Map<string, number> {
  const parentOf = new Map(nodes.map((n) => [n.id, n.parent]));
  const counts = new Map<string, number>();
  for (const node of nodes) {
    let parent = node.parent;
    const guard = new Set<string>(); // malformed data must not loop forever
    while (parent !== null && parent !== undefined && !guard.has(parent)) {
      guard.add(parent);
      counts.set(parent, (counts.get(parent) ?? 0) + 1);
      parent = parentOf.get(parent) ?? null;
    }
  }
  return counts;
}

function chipRows(count: number): number {
  const columns = chipColumns(count);
  return columns === 0 ? 0 : Math.ceil(count / columns);
}

/** Card height from its content, so the layout and the drawn card agree. */
export function cardHeight(chipCount: number, hasSummary: boolean): number {
  const rows = chipRows(chipCount);
  const chips = rows === 0 ? 0 : CHIP_PADDING + rows * CHIP_HEIGHT + (rows - 1) * CHIP_GAP;
  return CARD_BASE_HEIGHT + chips + (hasSummary ? SUMMARY_HEIGHT : 0);
}

/** Cards are 256 px wide (U-36) and grow when a chip grid needs more room (U-37). */
export function cardWidth(columns: number): number {
  const grid = columns === 0 ? 0 : columns * CHIP_WIDTH + (columns - 1) * CHIP_GAP + CARD_INSET_X;
  return Math.max(CARD_WIDTH, grid);
}

/** Builds one card per top-level node, with its runtime children as chips (U-36, U-37). */
export function buildCards(nodes: readonly RunNode[]): Card[] {
  const descendants = descendantCounts(nodes);
  const children = new Map<string, RunNode[]>();
  for (const node of nodes) {
    if (node.parent === null) continue;
    const list = children.get(node.parent) ?? [];
    list.push(node);
    children.set(node.parent, list);
  }
  return nodes
    .filter((n) => n.parent === null)
    .sort(byPosition)
    .map((node) => {
      const kids = [...(children.get(node.id) ?? [])].sort(
        (a, b) => attention(a.state) - attention(b.state) || byPosition(a, b),
      );
      const shown = kids.slice(0, MAX_CHIPS);
      const summary = hiddenSummary(kids.slice(MAX_CHIPS));
      const prefix = `${node.id}:`;
      return {
        node,
        chips: shown.map((c) => ({
          id: c.id,
          label: c.id.startsWith(prefix) ? c.id.slice(prefix.length) : c.id,
          state: c.state,
          error: c.error,
          jobId: c.job_id,
          descendants: descendants.get(c.id) ?? 0,
        })),
        chipColumns: chipColumns(shown.length),
        childTotal: kids.length,
        childCompleted: kids.filter((c) => c.state === "COMPLETED").length,
        hiddenSummary: summary,
        width: cardWidth(chipColumns(shown.length)),
        height: cardHeight(shown.length, summary !== ""),
      };
    });
}

/** U-38: the view is refitted only when the set of node ids changes. */
export function nodeIdsKey(nodes: readonly RunNode[]): string {
  return nodes
    .map((n) => n.id)
    .sort()
    .join("\n");
}
