// Live status: the connectors' runtime state as the hosted sessions report it, pushed by the
// server (GET /api/mcp/status/stream, Server-Sent Events; the session cookie authenticates a
// same-origin EventSource). Each `status` event carries one connector's runtime_state, status
// (the badge, the priority of control/status.py already applied) and runtime (sessions, calls in
// flight, restarts); connectors.js merges it into the list and the open detail without loading
// either again. When the stream breaks the page keeps what it shows and EventSource reconnects by
// itself (the server asks for 3 s); nothing polls.

import { applyLiveStatus } from "./connectors.js";

const STREAM_PATH = "/api/mcp/status/stream";
let source = null;

function onStatus(event) {
  let change;
  try {
    change = JSON.parse(event.data);
  } catch {
    return; // a malformed event changes nothing
  }
  if (change && typeof change.connector_id === "string") applyLiveStatus(change);
}

/** Subscribe to the live status stream (once; only on the connectors page). */
export function startLiveStatus() {
  if (source !== null || !document.getElementById("connectors-page") || typeof EventSource !== "function") return;
  source = new EventSource(STREAM_PATH);
  source.addEventListener("status", onStatus);
  // error: EventSource retries on its own; the page keeps showing the last known state
  source.addEventListener("error", () => {});
}
