// The Overview tab: what the connector is and where it points.

import { registerTab } from "./detail.js";
import { clone, setText, show, slot } from "./dom.js";
import { formatDate, formatNumber, t } from "./i18n.js";
import { targetSummary } from "./list.js";
import { badge } from "./status.js";

/** The last probe in one line: when, and ready with N tools or failed with its code. */
export function probeText(probe) {
  if (!probe) return t("never");
  const date = formatDate(probe.probed_at);
  const text =
    probe.state === "ready"
      ? t("probe_ready", { date, tools: formatNumber(probe.tool_count) })
      : t("probe_error", { date, code: probe.code ?? "unknown" });
  return probe.current ? text : `${text} ${t("probe_outdated")}`;
}

/** One data source of a built-in: its name linked to the service, its terms and its licence. */
function dataSourceItem(source) {
  const item = clone("tpl-data-source");
  const link = (name, href, text) => {
    const anchor = slot(item, name);
    if (/^https:\/\//.test(href)) anchor.href = href;
    if (text !== undefined) anchor.textContent = text;
  };
  link("source", source.url, source.name);
  link("source-terms", source.terms_url);
  link("source-licence", source.licence_url, source.licence);
  return item;
}

export function renderOverview(panel, connector) {
  setText(panel, "name", connector.name);
  setText(panel, "kind", t(`transport_${connector.transport}`));
  const target = connector.target;
  const summary = targetSummary(target);
  setText(panel, "target", target.transport === "stdio" && target.cwd ? `${summary} ${t("working_directory", { cwd: target.cwd })}` : summary);
  slot(panel, "status").replaceChildren(badge(connector.status));
  setText(panel, "enabled", connector.settings.enabled ? t("yes") : t("no"));
  setText(panel, "source", t(`source_${connector.source}`));
  // a built-in says where its data comes from, under which terms and which licence
  const sources = connector.data_sources ?? [];
  slot(panel, "data-sources").replaceChildren(...sources.map(dataSourceItem));
  show(slot(panel, "data-sources-row"), sources.length > 0);
  const terms = slot(panel, "terms");
  const builtinTerms = connector.source === "builtin" && /^https:\/\//.test(connector.terms_url ?? "");
  if (builtinTerms) {
    terms.href = connector.terms_url;
    terms.textContent = connector.terms_url;
  }
  show(slot(panel, "terms-row"), builtinTerms);
  setText(panel, "tools", formatNumber(connector.tool_count));
  setText(panel, "probe", probeText(connector.last_probe));
  setText(panel, "updated", formatDate(connector.updated_at));
  setText(panel, "description", connector.description || t("no_description"));
  const problem = slot(panel, "problem");
  show(problem, Boolean(connector.error));
  if (connector.error) {
    setText(problem, "problem-message", connector.error.message);
    setText(problem, "problem-code", t("error_code", { code: connector.error.details?.cause === "invalid_config" ? "invalid_config" : connector.error.code }));
  }
}

registerTab("overview", renderOverview);
