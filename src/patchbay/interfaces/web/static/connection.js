// The Connection tab: the connection state in one word (Configured / Checking / Ready / Needs
// auth / Error / Disabled, from the API's status, which already applies the priority of
// control/status.py), the three states it comes from, the last failure's stable code and message,
// the redacted stderr tail of a local command, what the server said about itself, and Probe now
// (POST .../probe), whose progress is shown and announced and whose outcome re-renders the detail.

import { announce } from "./announce.js";
import { api, ApiError, connectorPath } from "./api.js";
import { registerTab } from "./detail.js";
import { setText, show, slot } from "./dom.js";
import { formatNumber, t } from "./i18n.js";
import { renderConnect } from "./oauth_connect.js";
import { probeText } from "./overview.js";
import { showFailure, showSaved } from "./outcome.js";

const probing = new Set(); // connector ids with a probe in flight

/** The one word of the Connection tab for a connector's `status` (a probe in flight: checking). */
export function connectionState(status, inFlight = false) {
  if (inFlight) return "checking";
  return (
    {
      invalid: "error",
      disabled: "disabled",
      "needs-auth": "needs-auth",
      error: "error",
      connecting: "checking",
      checking: "checking",
      connected: "ready",
      ready: "ready",
    }[status] ?? "configured"
  );
}

function serverText(info) {
  if (!info || !info.name) return t("unknown_yet");
  return info.version ? t("server_name_version", { name: info.name, version: info.version }) : String(info.name);
}


/** The live status of the hosted sessions in one line (live.js keeps `runtime` current). */
function liveText(runtime) {
  if (!runtime) return t("live_none");
  if (runtime.state === "unknown") return t("live_unknown");
  const counts = t("live_sessions", {
    sessions: formatNumber(runtime.sessions),
    calls: formatNumber(runtime.in_flight),
    restarts: formatNumber(runtime.restarts),
  });
  if (runtime.failure_age === null || runtime.failure_age === undefined) return counts;
  return `${counts} · ${t("live_failed_ago", { seconds: formatNumber(runtime.failure_age) })}`;
}

function errorCode(error) {
  return error.details?.cause === "invalid_config" ? "invalid_config" : error.code;
}

function render(panel, connector, context) {
  const inFlight = probing.has(connector.connector_id);
  const word = connectionState(connector.status, inFlight);
  const state = slot(panel, "state");
  state.dataset.state = word;
  state.textContent = t(`connection_${word}`);
  setText(panel, "config", t(`config_${connector.config_state}`));
  setText(panel, "auth", t(`auth_${connector.auth_state}`));
  setText(panel, "runtime", t(`runtime_${connector.runtime_state}`));
  setText(panel, "live", liveText(connector.runtime));
  setText(panel, "server", serverText(connector.cache?.server_info));
  setText(panel, "protocol", connector.protocol_version || t("unknown_yet"));
  // a live connection's own list beats the cached catalog's count (0 before any probe)
  const live = connector.runtime?.state === "connected" ? connector.runtime.tool_count : null;
  setText(panel, "tools", formatNumber(live ?? connector.tool_count));
  setText(panel, "probe", probeText(connector.last_probe));
  const problem = slot(panel, "problem");
  show(problem, Boolean(connector.error));
  if (connector.error) {
    setText(problem, "problem-message", connector.error.message);
    setText(problem, "problem-code", t("error_code", { code: errorCode(connector.error) }));
  }
  const tail = (connector.stderr_tail ?? "").trimEnd();
  show(slot(panel, "stderr-box"), connector.transport === "stdio" && tail !== "");
  setText(panel, "stderr", tail);
  const button = panel.querySelector('[data-action="probe"]');
  button.onclick = () => probe(panel, connector, context, button);
  busy(panel, button, inFlight);
  renderConnect(panel, connector, context, { onlyWhenNeeded: true });
}

function busy(panel, button, on) {
  // aria-disabled, not disabled: disabling the focused button would drop the keyboard focus
  if (on) {
    button.setAttribute("aria-disabled", "true");
    panel.setAttribute("aria-busy", "true");
  } else {
    button.removeAttribute("aria-disabled");
    panel.removeAttribute("aria-busy");
  }
  show(slot(panel, "probing"), on);
}

async function probe(panel, connector, context, button) {
  const id = connector.connector_id;
  if (probing.has(id)) return; // one probe at a time per connector
  const name = connector.display_name || connector.name;
  probing.add(id);
  render(panel, connector, context);
  announce(t("probe_started", { name }));
  let report = null;
  try {
    report = await api.post(connectorPath(id, "/probe"));
  } catch (error) {
    showFailure(error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)));
  } finally {
    probing.delete(id);
  }
  if (report !== null) {
    if (report.state === "ready") {
      showSaved(report.runtime_reload, t("probe_done_ready", { name, tools: formatNumber(report.tool_count) }));
    } else {
      showFailure(new ApiError(200, report.code ?? "unknown", t("probe_done_error", { name, message: report.message ?? "" })));
    }
  }
  await context.reload();
  if (!document.body.contains(button)) return;
  busy(panel, button, false);
}

registerTab("connection", render);
