// Adapter from the graph model to dagre (U-36: rank direction LR, node separation 32, rank
// separation 80, margins 16) plus the orthogonal edge routing drawn between ranks.
import dagre from "@dagrejs/dagre";
import type { GraphEdge } from "./graph";

export interface Box {
  id: string;
  width: number;
  height: number;
}

export interface Point {
  x: number;
  y: number;
}

export interface Layout {
  /** Top-left corner of each card. */
  positions: Map<string, Point>;
  /** x of the vertical segment of each edge, spread evenly across the gap before its target. */
  lanes: Map<string, number>;
}

export function layoutGraph(boxes: readonly Box[], edges: readonly GraphEdge[]): Layout {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "LR", nodesep: 32, ranksep: 80, marginx: 16, marginy: 16 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const box of boxes) g.setNode(box.id, { width: box.width, height: box.height });
  for (const edge of edges) g.setEdge(edge.source, edge.target);
  dagre.layout(g);

  const positions = new Map<string, Point>();
  for (const box of boxes) {
    const n = g.node(box.id);
    positions.set(box.id, { x: n.x - box.width / 2, y: n.y - box.height / 2 });
  }
  return { positions, lanes: laneXs(boxes, positions, edges) };
}

/** Vertical segments run in the gap left of the target's rank, spread evenly when edges share it. */
export function laneXs(
  boxes: readonly Box[],
  positions: ReadonlyMap<string, Point>,
  edges: readonly GraphEdge[],
): Map<string, number> {
  const width = new Map(boxes.map((b) => [b.id, b.width]));
  const groups = new Map<number, GraphEdge[]>();
  for (const edge of edges) {
    const target = positions.get(edge.target);
    if (target === undefined) continue;
    const key = Math.round(target.x);
    groups.set(key, [...(groups.get(key) ?? []), edge]);
  }
  const lanes = new Map<string, number>();
  for (const [gapEnd, group] of groups) {
    // The gap starts at the right edge of the nearest rank left of the target.
    let gapStart = -Infinity;
    for (const [id, p] of positions) {
      const right = p.x + (width.get(id) ?? 0);
      if (p.x < gapEnd && right <= gapEnd) gapStart = Math.max(gapStart, right);
    }
    if (!Number.isFinite(gapStart)) gapStart = gapEnd - 80;
    const y = (id: string): number => positions.get(id)?.y ?? 0;
    group.sort((a, b) => y(a.source) - y(b.source) || y(a.target) - y(b.target));
    group.forEach((edge, i) => {
      lanes.set(edge.id, gapStart + ((i + 1) * (gapEnd - gapStart)) / (group.length + 1));
    });
  }
  return lanes;
}

function sign(value: number): number {
  return value < 0 ? -1 : 1;
}

/**
 * SVG path from a source handle to a target handle: horizontal, vertical at `laneX`, horizontal,
 * with rounded corners (U-36: radius 8). A lane outside the span (after a drag) falls back to the middle.
 */
export function orthogonalPath(source: Point, target: Point, laneX: number | undefined, radius = 8): string {
  const dy = target.y - source.y;
  if (Math.abs(dy) < 1) return `M ${source.x} ${source.y} L ${target.x} ${target.y}`;
  const lo = Math.min(source.x, target.x);
  const hi = Math.max(source.x, target.x);
  const x = laneX !== undefined && laneX > lo && laneX < hi ? laneX : (source.x + target.x) / 2;
  const r = Math.max(0, Math.min(radius, Math.abs(dy) / 2, Math.abs(x - source.x), Math.abs(target.x - x)));
  const sx1 = sign(x - source.x);
  const sy = sign(dy);
  const sx2 = sign(target.x - x);
  return [
    `M ${source.x} ${source.y}`,
    `L ${x - r * sx1} ${source.y}`,
    `Q ${x} ${source.y} ${x} ${source.y + r * sy}`,
    `L ${x} ${target.y - r * sy}`,
    `Q ${x} ${target.y} ${x + r * sx2} ${target.y}`,
    `L ${target.x} ${target.y}`,
  ].join(" ");
}
