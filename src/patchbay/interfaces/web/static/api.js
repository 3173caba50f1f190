// The page's one way to the REST API: fetch on the same origin with the session cookie, JSON in
// and out, the CSRF header on every request that changes something, and errors as ApiError with
// the API's stable `code` (front ends switch on codes, never on message text).
//
//   import { api, ApiError, isRevisionConflict, reloadOutcome } from "./api.js";
//   const { connectors } = await api.get("/api/mcp/connectors");
//   const changed = await api.put(`/api/mcp/connectors/${id}/settings`, { revision, enabled: false });
//   reloadOutcome(changed.runtime_reload).kind  // "saved" | "pending" | "failed"

import { t } from "./i18n.js";

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/** A failed API call: `status` (0 when the server did not answer), the stable `code`, the
 * server's redacted `message` and its `details` (e.g. `field`, `expected`/`actual`). */
export class ApiError extends Error {
  constructor(status, code, message, details = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.details = details ?? {};
  }
}

/** The session's CSRF token, rendered by the server into <meta name="patchbay-csrf">. */
export function csrfToken() {
  return document.querySelector('meta[name="patchbay-csrf"]')?.content ?? "";
}

/** One request. `body` (if any) is sent as JSON; resolves to the parsed JSON answer (null for
 * an empty one), rejects with ApiError: code "unreachable" when no answer came at all. */
export async function request(method, path, body = undefined) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const token = csrfToken();
  if (UNSAFE.has(method) && token) {
    headers["X-Patchbay-CSRF"] = token;
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    throw new ApiError(0, "unreachable", t("unreachable"));
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!response.ok) {
    const error = data?.error;
    throw new ApiError(
      response.status,
      error?.code ?? "unknown",
      error?.message ?? `HTTP ${response.status}`,
      error?.details ?? {},
    );
  }
  return data;
}

export const api = {
  get: (path) => request("GET", path),
  post: (path, body) => request("POST", path, body),
  put: (path, body) => request("PUT", path, body),
  patch: (path, body) => request("PATCH", path, body),
  delete: (path, body) => request("DELETE", path, body),
};

/** `/api/mcp/connectors/<ref>` plus `suffix`, the reference escaped. */
export function connectorPath(ref, suffix = "") {
  return `/api/mcp/connectors/${encodeURIComponent(ref)}${suffix}`;
}

/** Whether `error` is a lost revision race (the connector changed since the page read it):
 * reload and show it, never retry blindly. A taken name is a 409 too, but no race. */
export function isRevisionConflict(error) {
  return error instanceof ApiError && error.code === "revision_conflict" && error.details?.cause !== "name_taken";
}

/** What a mutation's `runtime_reload` means for the person: `kind` "saved" (every session took
 * it, or none is open), "pending" (a session finishes a call first) or "failed" (a session
 * could not be rebuilt: the change is saved all the same), and the sessions it names. */
export function reloadOutcome(runtimeReload) {
  const sessions = runtimeReload?.sessions ?? [];
  if (runtimeReload?.code === "runtime_reload_failed" || sessions.some((s) => s.status === "failed")) {
    return { kind: "failed", sessions: sessions.filter((s) => s.status !== "reloaded") };
  }
  if (sessions.some((s) => s.status === "pending")) {
    return { kind: "pending", sessions: sessions.filter((s) => s.status === "pending") };
  }
  return { kind: "saved", sessions: [] };
}
