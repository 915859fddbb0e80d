// The only door to the server (U-4): same-origin `/api/...`, cookies for auth, never an
// Authorization header. A 401 flips the app into the unauthorized state (U-6).
import { reactive } from "vue";

export const auth = reactive({ unauthorized: false });

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body: unknown,
  ) {
    super(message);
  }
}

export interface ApiResult<T> {
  status: number;
  body: T;
}

function errorText(status: number, body: unknown): string {
  if (typeof body === "object" && body !== null && typeof (body as { error?: unknown }).error === "string") {
    return (body as { error: string }).error;
  }
  return `Request failed (${status})`;
}

async function request<T>(method: "GET" | "POST", path: string, body?: unknown): Promise<ApiResult<T>> {
  const init: RequestInit = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { "content-type": "application/json" };
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let parsed: unknown = null;
  try {
    parsed = text === "" ? null : JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (response.status === 401) {
    auth.unauthorized = true;
    throw new ApiError(401, errorText(401, parsed), parsed);
  }
  auth.unauthorized = false;
  if (!response.ok) throw new ApiError(response.status, errorText(response.status, parsed), parsed);
  return { status: response.status, body: parsed as T };
}

export function getJson<T>(path: string): Promise<T> {
  return request<T>("GET", path).then((r) => r.body);
}

export function postJson<T>(path: string, body: unknown): Promise<ApiResult<T>> {
  return request<T>("POST", path, body);
}

/** ids are encoded whole, so `#` travels as `%23`. */
export function idPath(prefix: string, id: string, suffix = ""): string {
  return `${prefix}/${encodeURIComponent(id)}${suffix}`;
}

/** U-25: the toolbar text after a mutation. */
export function mutationMessage(error: unknown, okText = "Accepted"): string {
  if (error === null) return okText;
  if (error instanceof ApiError) return error.message;
  return "Request failed";
}

/** "Failed to load: <server error or status>" (U-12). */
export function loadError(error: unknown): string {
  if (error instanceof ApiError) return `Failed to load: ${error.message}`;
  return `Failed to load: ${error instanceof Error ? error.message : String(error)}`;
}

/** Runs a mutation and turns the outcome into the message the toolbar shows. */
export async function mutate(path: string, body: unknown = {}): Promise<{ message: string; status: number }> {
  try {
    const result = await postJson<{ requested?: boolean }>(path, body);
    const requested = result.body?.requested === true;
    return { message: requested ? "Cancellation requested" : "Accepted", status: result.status };
  } catch (error) {
    return { message: mutationMessage(error), status: error instanceof ApiError ? error.status : 0 };
  }
}
