// "Expose resources" on the Default agent access tab: the connector's global resource-read grant
// (its own key space; no tool grant touches it). The switch is on when the global grant is
// `allow`; turning it on is PUT .../resources/grant {decision: "allow"}, turning it off is
// DELETE .../resources/grant (the default decision decides again). Grants bump no revision, so
// these calls carry none. A global `deny` (set with the CLI) is shown and not changed here.

import { api, connectorPath } from "./api.js";
import { setText, slot } from "./dom.js";
import { t } from "./i18n.js";
import { showFailure, showSaved } from "./outcome.js";

let rendered = 0; // the latest render; an answer for an older one is dropped

/** What the state line says for the API's `resource_reads` (ResourceReadsDecisionView). */
export function resourcesStateKey(reads) {
  if (reads.global_grant === "deny") return "resources_now_denied";
  if (reads.source === "disabled") return "resources_now_off";
  if (reads.source === "global_grant") return reads.decision === "allow" ? "resources_now_allowed" : "resources_now_grant_ask";
  if (reads.source === "allow_all") return "resources_now_allow_all";
  return "resources_now_ask";
}

function fill(section, reads) {
  const toggle = slot(section, "resources-toggle");
  toggle.checked = reads.global_grant === "allow";
  toggle.disabled = reads.global_grant === "deny";
  section.dataset.decision = reads.decision;
  setText(section, "resources-state", t(resourcesStateKey(reads)));
}

async function read(section, connector, token) {
  const listing = await api.get(connectorPath(connector.connector_id, "/tools"));
  if (token !== rendered) return null;
  fill(section, listing.resource_reads);
  return listing.resource_reads;
}

async function change(section, connector, toggle) {
  const wanted = toggle.checked;
  if (section.getAttribute("aria-busy") === "true") {
    toggle.checked = !wanted; // one write at a time
    return;
  }
  section.setAttribute("aria-busy", "true");
  const path = connectorPath(connector.connector_id, "/resources/grant");
  const name = connector.display_name || connector.name;
  try {
    const answer = wanted ? await api.put(path, { decision: "allow" }) : await api.delete(path);
    showSaved(answer.runtime_reload, t(wanted ? "resources_exposed" : "resources_unexposed", { name }));
  } catch (error) {
    toggle.checked = !wanted;
    showFailure(error);
  } finally {
    section.removeAttribute("aria-busy");
  }
  try {
    await read(section, connector, rendered);
  } catch (error) {
    showFailure(error);
  }
}

/** Fill the "Expose resources" part of the access `panel` for `connector` (a ConnectorDetail). */
export function renderResources(panel, connector) {
  const section = slot(panel, "resources");
  if (!section) return;
  rendered += 1;
  const token = rendered;
  const toggle = slot(section, "resources-toggle");
  toggle.onchange = () => change(section, connector, toggle);
  setText(section, "resources-state", t("resources_loading"));
  read(section, connector, token).catch((error) => {
    if (token !== rendered) return;
    setText(section, "resources-state", t("resources_unreadable", { message: error.message, code: error.code ?? "unknown" }));
  });
}
