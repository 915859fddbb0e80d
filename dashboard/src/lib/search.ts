// The jobs search box (U-20): one exact-match field at a time, index-backed on the server.

export type SearchField = "id" | "unique_key" | "concurrency_key";

export const SEARCH_FIELDS: { key: SearchField; label: string }[] = [
  { key: "id", label: "ID" },
  { key: "unique_key", label: "Unique key" },
  { key: "concurrency_key", label: "Concurrency key" },
];

/** `<binding>#<shard>:<localId>`; an exact id opens the job detail at once (U-20). */
export const JOB_ID_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*#\d+:[A-Za-z0-9_-]+$/;

// ADR-0093: `field=value` picks the field from the text itself. Job ids never contain "=", so
// an id pasted as-is is never mistaken for a prefixed value.
const PREFIXES: Record<string, SearchField> = {
  id: "id",
  unique_key: "unique_key",
  uk: "unique_key",
  concurrency_key: "concurrency_key",
  ck: "concurrency_key",
};

export interface ParsedSearch {
  field: SearchField;
  value: string;
  /** Set when the value is a well-formed job id searched by id. */
  openJobId: string | null;
}

export function searchPlaceholder(field: SearchField): string {
  const label = SEARCH_FIELDS.find((f) => f.key === field)?.label ?? field;
  return `Search by ${label.toLowerCase()}`;
}

/** Reads the committed search text; `selected` is the field chosen in the selector. */
export function parseSearch(selected: SearchField, text: string): ParsedSearch {
  let field = selected;
  let value = text.trim();
  const eq = value.indexOf("=");
  if (eq > 0) {
    const prefix = PREFIXES[value.slice(0, eq).trim().toLowerCase()];
    if (prefix !== undefined) {
      field = prefix;
      value = value.slice(eq + 1).trim();
    }
  }
  const openJobId = field === "id" && JOB_ID_PATTERN.test(value) ? value : null;
  return { field, value, openJobId };
}

/** U-20: only the selected field is sent, and only when it holds a value. */
export function searchParams(search: ParsedSearch): Record<string, string> {
  return search.value === "" ? {} : { [search.field]: search.value };
}
