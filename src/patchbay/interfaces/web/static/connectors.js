// The connectors page: the master list (search, filter chips, groups, badges, on/off switches;
// empty, error and partial-status states) and the detail pane, with deep links
// (/ui/connectors/<id>) and, below 700 px, list and detail as separate screens with Back.
// Every read and write goes through the REST API (api.js).

import { announce } from "./announce.js";
import { api, ApiError, connectorPath, isRevisionConflict } from "./api.js";
import { initDetail, renderDetail, renderDetailLive, resetTab } from "./detail.js";
import { clone, setText, show, slot } from "./dom.js";
import { formatNumber, t } from "./i18n.js";
import { targetSummary, visibleGroups } from "./list.js";
import { clearOutcome, showConflict, showFailure, showSaved } from "./outcome.js";
import { badge } from "./status.js";

const PAGE_PATH = "/ui";
const busy = new Set(); // connector ids with a switch write in flight
const $ = (id) => document.getElementById(id);

const state = {
  connectors: null, // the API's list, null until loaded
  filter: "all",
  query: "",
  selected: null, // the reference in the URL: a connector id (or name, from a typed deep link)
  detail: null, // the selected connector's ConnectorDetail
  loadError: null,
};

function isSelected(connector) {
  return state.selected !== null && (connector.connector_id === state.selected || connector.name === state.selected);
}

// --- the list -------------------------------------------------------------------------------

function focusKey() {
  return document.activeElement?.dataset?.focus ?? null;
}

function restoreFocus(key) {
  if (!key) return;
  const element = document.querySelector(`[data-focus="${CSS.escape(key)}"]`);
  element?.focus();
}

function renderRow(connector) {
  const row = clone("tpl-row");
  row.dataset.id = connector.connector_id;
  row.dataset.status = connector.status;
  const link = slot(row, "link");
  link.href = `${PAGE_PATH}/connectors/${encodeURIComponent(connector.connector_id)}`;
  link.dataset.focus = `link:${connector.connector_id}`;
  if (isSelected(connector)) link.setAttribute("aria-current", "page");
  setText(row, "name", connector.display_name || connector.name);
  // a built-in's command is Patchbay's own: its row says what it is and where its data comes from
  const builtin = connector.source === "builtin";
  setText(row, "kind", builtin ? t("source_builtin") : t(`transport_${connector.transport}`));
  setText(row, "target", builtin ? connector.description : targetSummary(connector.target));
  slot(row, "badge").replaceChildren(badge(connector.status));
  const toggle = slot(row, "toggle");
  toggle.dataset.focus = `toggle:${connector.connector_id}`;
  toggle.setAttribute("aria-checked", String(connector.settings.enabled));
  toggle.setAttribute("aria-label", t("toggle_label", { name: connector.display_name || connector.name }));
  link.addEventListener("click", (event) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    select(connector.connector_id, { push: true, focus: true });
  });
  toggle.addEventListener("click", () => toggleEnabled(connector.connector_id, toggle));
  return row;
}

function renderList() {
  const key = focusKey();
  const connectors = state.connectors;
  show($("list-loading"), connectors === null && state.loadError === null);
  show($("list-error"), state.loadError !== null);
  if (state.loadError !== null) {
    setText($("list-error"), "message", state.loadError.message);
    setText($("list-error"), "code", state.loadError.code ? t("error_code", { code: state.loadError.code }) : "");
  }
  const groups = $("groups");
  if (connectors === null) {
    groups.replaceChildren();
    for (const id of ["list-empty", "partial-status", "list-summary", "list-nomatch"]) show($(id), false);
    return;
  }
  show($("list-empty"), connectors.length === 0);
  const unknown = connectors.filter((c) => c.status === "unknown").length;
  show($("partial-status"), unknown > 0);
  setText($("partial-status"), "message", t("partial_status", { count: formatNumber(unknown) }));
  const visible = visibleGroups(connectors, state.filter, state.query);
  const shown = visible.reduce((sum, [, list]) => sum + list.length, 0);
  show($("list-summary"), connectors.length > 0);
  $("list-summary").textContent = t("count_shown", { shown: formatNumber(shown), total: formatNumber(connectors.length) });
  show($("list-nomatch"), connectors.length > 0 && shown === 0);
  groups.replaceChildren(
    ...visible.map(([group, list]) => {
      const section = clone("tpl-group");
      section.dataset.group = group;
      const title = slot(section, "title");
      title.textContent = t(`group_${group}`);
      title.id = `group-${group}`;
      slot(section, "rows").setAttribute("aria-labelledby", title.id);
      setText(section, "count", `(${formatNumber(list.length)})`);
      slot(section, "rows").replaceChildren(...list.map(renderRow));
      return section;
    }),
  );
  restoreFocus(key);
}

async function loadList() {
  state.loadError = null;
  renderList();
  try {
    const { connectors } = await api.get("/api/mcp/connectors");
    state.connectors = connectors;
    announce(t("loaded", { count: formatNumber(connectors.length) }));
  } catch (error) {
    state.connectors = null;
    state.loadError = error instanceof ApiError ? error : new ApiError(0, "unknown", String(error));
    announce(state.loadError.message);
  }
  renderList();
}

function replaceSummary(connector) {
  if (state.connectors === null) return;
  state.connectors = state.connectors.map((c) => (c.connector_id === connector.connector_id ? connector : c));
}

async function toggleEnabled(connectorId, button) {
  const connector = state.connectors?.find((c) => c.connector_id === connectorId);
  if (!connector) return;
  if (busy.has(connectorId)) return; // one write at a time per connector
  const enabled = !connector.settings.enabled;
  const name = connector.display_name || connector.name;
  busy.add(connectorId);
  // aria-disabled, not disabled: disabling the focused switch would drop the keyboard focus
  button.setAttribute("aria-disabled", "true");
  button.setAttribute("aria-busy", "true");
  try {
    const changed = await api.put(connectorPath(connectorId, "/settings"), {
      revision: connector.settings.revision,
      enabled,
    });
    replaceSummary(changed);
    if (state.detail?.connector_id === connectorId) {
      state.detail = changed;
      renderDetail(changed, detailContext);
    }
    renderList();
    showSaved(changed.runtime_reload, t(enabled ? "enabled_now" : "disabled_now", { name }));
  } catch (error) {
    if (isRevisionConflict(error)) {
      showConflict();
      await reloadAll();
    } else {
      showFailure(error);
      renderList();
    }
  } finally {
    busy.delete(connectorId);
    button.removeAttribute("aria-disabled");
    button.removeAttribute("aria-busy");
  }
}

// --- the detail pane -----------------------------------------------------------------------

const detailContext = {
  reload: () => loadDetail(),
  replace: (connector) => {
    state.detail = connector;
    replaceSummary(connector);
    renderDetail(connector, detailContext);
    renderList();
  },
  removed: (connectorId) => removeFromList(connectorId),
};

// After Remove: the connector leaves the list, the selection clears (the URL too) and the focus
// goes to the row that took its place, else to the next one up, else to Add connector.
function removeFromList(connectorId) {
  const links = [...document.querySelectorAll("#groups .row-link")];
  const index = links.findIndex((link) => link.dataset.focus === `link:${connectorId}`);
  const neighbour = links[index + 1] ?? links[index - 1] ?? null;
  if (state.connectors !== null) state.connectors = state.connectors.filter((c) => c.connector_id !== connectorId);
  history.pushState({ selected: null }, "", PAGE_PATH);
  state.selected = null;
  state.detail = null;
  setView("list");
  showDetailState("placeholder");
  renderList();
  const target = neighbour ? document.querySelector(`[data-focus="${CSS.escape(neighbour.dataset.focus)}"]`) : null;
  (target ?? $("add-connector")).focus();
}

function setView(view) {
  $("connectors-page").dataset.view = view;
  // the language switcher reloads the page the person is on, whatever the script navigated to
  for (const link of document.querySelectorAll(".lang a[href]")) {
    const url = new URL(link.href);
    url.pathname = location.pathname;
    link.href = url.pathname + url.search;
  }
}

function showDetailState(which) {
  show($("detail-placeholder"), which === "placeholder");
  show($("detail-loading"), which === "loading");
  show($("detail-error"), which === "error");
  show($("detail-body"), which === "body");
}

async function loadDetail() {
  const ref = state.selected;
  if (ref === null) {
    showDetailState("placeholder");
    return;
  }
  if (state.detail === null) showDetailState("loading");
  try {
    const detail = await api.get(connectorPath(ref));
    if (state.selected !== ref) return; // another one was selected meanwhile
    state.detail = detail;
    renderDetail(detail, detailContext);
    showDetailState("body");
    if (state.connectors?.some((c) => c.connector_id === detail.connector_id)) {
      replaceSummary(detail); // the row shows what the detail shows (a probe changes the badge)
      renderList();
    }
  } catch (error) {
    if (state.selected !== ref) return;
    state.detail = null;
    const box = $("detail-error");
    const notFound = error instanceof ApiError && error.code === "not_found";
    setText(box, "message", notFound ? t("not_found", { ref }) : error.message);
    setText(box, "code", error.code ? t("error_code", { code: error.code }) : "");
    showDetailState("error");
  }
}

async function select(ref, { push = false, focus = false } = {}) {
  const changed = state.selected !== ref;
  state.selected = ref;
  if (changed) {
    state.detail = null;
    resetTab();
  }
  if (push) history.pushState({ selected: ref }, "", `${PAGE_PATH}/connectors/${encodeURIComponent(ref)}`);
  setView("detail");
  renderList();
  await loadDetail();
  if (state.detail) announce(t("detail_opened", { name: state.detail.display_name || state.detail.name }));
  if (focus) $("detail-heading").focus();
}

function showList({ push = false } = {}) {
  const previous = state.selected;
  if (push) history.pushState({ selected: null }, "", PAGE_PATH);
  state.selected = null;
  state.detail = null;
  setView("list");
  showDetailState("placeholder");
  renderList();
  if (previous) restoreFocus(`link:${previous}`);
}

async function reloadAll() {
  await loadList();
  if (state.selected !== null) await loadDetail();
}

function routeFromLocation() {
  const match = location.pathname.match(/^\/ui\/connectors\/([^/]+)$/);
  if (match) {
    select(decodeURIComponent(match[1]));
  } else {
    showList();
  }
}

/** After the Add/Edit form (or another writer) saved a connector: reload the list, select it and
 * show the outcome; after a lost revision race: show the conflict and reload, writing nothing. */
async function onConnectorSaved({ connectorId, runtimeReload = null, message = "", conflict = false, failure = null }) {
  clearOutcome();
  if (conflict) {
    showConflict();
    await reloadAll();
    return;
  }
  await loadList();
  await select(connectorId, { push: state.selected !== connectorId, focus: true });
  if (failure) showFailure(failure); // saved, but a second write (the OAuth settings) failed
  else showSaved(runtimeReload, message);
}

// --- wiring --------------------------------------------------------------------------------

function onListKeydown(event) {
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  const link = event.target.closest(".row-link");
  if (!link) return;
  const links = [...document.querySelectorAll("#groups .row-link")];
  const next = links[links.indexOf(link) + (event.key === "ArrowDown" ? 1 : -1)];
  if (next) {
    event.preventDefault();
    next.focus();
  }
}

export function startConnectorsPage() {
  const page = $("connectors-page");
  if (!page) return;
  initDetail();
  $("search").addEventListener("input", (event) => {
    state.query = event.target.value;
    renderList();
  });
  for (const chip of document.querySelectorAll(".filters [data-filter]")) {
    chip.addEventListener("click", () => {
      state.filter = chip.dataset.filter;
      for (const other of document.querySelectorAll(".filters [data-filter]")) {
        other.setAttribute("aria-pressed", String(other === chip));
      }
      renderList();
    });
  }
  $("retry").addEventListener("click", () => reloadAll());
  $("back").addEventListener("click", () => showList({ push: true }));
  $("groups").addEventListener("keydown", onListKeydown);
  document.addEventListener("patchbay:connector-saved", (event) => onConnectorSaved(event.detail));
  // another part of the page (or another writer) changed the connectors: show them as they are now
  document.addEventListener("patchbay:reload", () => reloadAll());
  // an import changed connectors: reload, showing the filter it names
  document.addEventListener("patchbay:connectors-changed", (event) => {
    const wanted = event.detail?.filter;
    if (wanted) document.querySelector(`.filters [data-filter="${CSS.escape(wanted)}"]`)?.click();
    reloadAll();
  });
  window.addEventListener("popstate", routeFromLocation);
  const selected = page.dataset.selected;
  loadList().then(() => {
    if (selected) select(selected);
  });
  if (!selected) showDetailState("placeholder");
}

// --- live status (live.js) -------------------------------------------------------------------

/** Merge one live status change (`{connector_id, runtime_state, status, runtime}`) into the list
 * and the open detail; a change of the selected connector's badge is announced. */
export function applyLiveStatus(change) {
  const merge = (c) =>
    c.connector_id === change.connector_id
      ? { ...c, runtime_state: change.runtime_state, status: change.status, runtime: change.runtime }
      : c;
  if (state.connectors?.some((c) => c.connector_id === change.connector_id)) {
    state.connectors = state.connectors.map(merge);
    renderList();
  }
  if (state.detail?.connector_id === change.connector_id) {
    const before = state.detail.status;
    state.detail = merge(state.detail);
    renderDetailLive(state.detail, detailContext);
    if (before !== change.status) {
      const name = state.detail.display_name || state.detail.name;
      announce(t("live_status_changed", { name, state: badge(change.status).textContent.trim() }));
    }
  }
}
