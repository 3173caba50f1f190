// The detail pane: its header (title, name, badge) and a tab per aspect of the connector. Each
// tab is a button and a panel in connectors.html (data-tab / data-panel) plus a renderer
// registered here under the same name; renderDetail calls every renderer with its panel.
//
//   import { registerTab } from "./detail.js";
//   registerTab("tools", (panel, connector, context) => { ... });
//
// `context` has `reload()` (fetch the connector again and re-render every tab) and
// `replace(connector)` (re-render from a mutation's answer).

import { setText, slot } from "./dom.js";
import { badge } from "./status.js";
import { initTabs } from "./tabs.js";

const renderers = new Map();
let activateTab = null;

/** Register the renderer of tab `name`: `render(panel, connector, context)`. */
export function registerTab(name, render) {
  renderers.set(name, render);
}

/** Wire the tabs once (keyboard, selection). */
export function initDetail() {
  const list = document.getElementById("detail-tabs");
  if (list) activateTab = initTabs(list);
}

/** Show the first tab (when another connector is selected). */
export function resetTab() {
  const first = document.querySelector('#detail-tabs [role="tab"]');
  if (first && activateTab) activateTab(first.dataset.tab);
}

/** Fill the pane with `connector` (the API's ConnectorDetail). */
export function renderDetail(connector, context) {
  const body = document.getElementById("detail-body");
  setText(body, "title", connector.display_name || connector.name);
  const header = body.querySelector(".detail-header");
  slot(header, "badge").replaceChildren(badge(connector.status));
  body.querySelector(":scope > [data-slot=name]").textContent = connector.name;
  for (const panel of body.querySelectorAll("[data-panel]")) {
    const render = renderers.get(panel.dataset.panel);
    if (render) render(panel, connector, context);
  }
}

/** After a live status change: the header's badge and the Connection tab only (the other tabs
 * may hold a person's unsaved input). */
export function renderDetailLive(connector, context) {
  const body = document.getElementById("detail-body");
  slot(body.querySelector(".detail-header"), "badge").replaceChildren(badge(connector.status));
  const panel = body.querySelector('[data-panel="connection"]');
  const render = renderers.get("connection");
  if (panel && render) render(panel, connector, context);
}
