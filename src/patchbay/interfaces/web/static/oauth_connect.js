// Connect: an OAuth login from the page. POST .../oauth/start answers with the authorization
// server's URL, opened in a new window; the server sends that window back to
// /api/mcp/oauth/callback, which finishes the login and posts only "success" or "failure" to
// this page (origin checked). When the page regains focus it also reads .../oauth/status, in
// case no message came. Either way the connector is read again. Nothing is stored in the browser.
//
//   import { renderConnect } from "./oauth_connect.js";
//   renderConnect(panel, connector, context);                   // Security tab
//   renderConnect(panel, connector, context, { onlyWhenNeeded: true }); // Connection tab

import { announce } from "./announce.js";
import { api, connectorPath } from "./api.js";
import { setText, show, slot } from "./dom.js";
import { t } from "./i18n.js";

const WINDOW_NAME = "patchbay-oauth";
const login = { connectorId: null, context: null, popup: null }; // the login waiting, if any
const outcomes = new Map(); // connector id → the last login's outcome text

function remote(connector) {
  return connector.transport === "streamable_http" || connector.transport === "sse";
}

function blocks() {
  return [...document.querySelectorAll('[data-slot="oauth-connect"]')];
}

function paint(connectorId) {
  for (const block of blocks()) {
    if (block.dataset.connector !== connectorId) continue;
    const waiting = login.connectorId === connectorId;
    show(slot(block, "oauth-connect-busy"), waiting);
    const button = block.querySelector('[data-action="oauth-connect"]');
    if (waiting) button.setAttribute("aria-busy", "true");
    else button.removeAttribute("aria-busy");
    setText(block, "oauth-connect-outcome", outcomes.get(connectorId) ?? "");
  }
}

function settle(ok, code = null) {
  const { connectorId, context } = login;
  if (!connectorId) return;
  login.connectorId = null;
  login.context = null;
  login.popup = null;
  const text = ok ? t("oauth_connect_done") : code ? t("oauth_connect_failed_code", { code }) : t("oauth_connect_failed");
  outcomes.set(connectorId, text);
  paint(connectorId);
  announce(text);
  context?.reload();
}

async function connect(connector, context) {
  if (login.connectorId) return; // one login at a time
  const id = connector.connector_id;
  outcomes.delete(id);
  // opened now, in the click, so no popup blocker stops it; it gets the URL once it is known
  const popup = window.open("about:blank", WINDOW_NAME);
  login.connectorId = id;
  login.context = context;
  login.popup = popup;
  paint(id);
  let answer;
  try {
    answer = await api.post(connectorPath(id, "/oauth/start"));
  } catch (error) {
    popup?.close();
    settle(false, error.code ?? "unknown");
    return;
  }
  if (answer.state !== "pending") {
    popup?.close();
    settle(answer.state === "authorized", answer.code ?? null);
    return;
  }
  if (popup && !popup.closed) popup.location.href = answer.authorize_url;
  else login.popup = window.open(answer.authorize_url, WINDOW_NAME);
}

async function onFocus() {
  const id = login.connectorId;
  if (!id) return;
  try {
    const status = await api.get(connectorPath(id, "/oauth/status"));
    if (login.connectorId !== id) return;
    if (status.state === "authorized") settle(true);
    else if (login.popup?.closed) settle(false);
  } catch {
    // the status stays unknown; the callback's message may still come
  }
}

function onMessage(event) {
  if (event.origin !== window.location.origin) return;
  const data = event.data;
  if (!data || data.type !== "patchbay-oauth" || !login.connectorId) return;
  settle(data.outcome === "success");
}

/** Show (or hide) the Connect block of `panel` for `connector`. `onlyWhenNeeded`: only while the
 * connector needs authentication (the Connection tab). */
export function renderConnect(panel, connector, context, { onlyWhenNeeded = false } = {}) {
  const block = slot(panel, "oauth-connect");
  if (!block) return;
  const configured = remote(connector) && Boolean(connector.oauth_state);
  show(block, configured && (!onlyWhenNeeded || connector.auth_state === "needs-auth"));
  block.dataset.connector = connector.connector_id;
  block.querySelector('[data-action="oauth-connect"]').onclick = () => connect(connector, context);
  paint(connector.connector_id);
}

window.addEventListener("message", onMessage);
window.addEventListener("focus", onFocus);
