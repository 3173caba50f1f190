// The Tools tab: every tool of the connector's cached catalog with its effective decision in one
// scope (the global defaults, or a workspace's project), an Allow / Ask / Deny control per tool,
// Inherit for a project override, a filter, bulk apply to the tools shown, "N of M allowed", and
// Refresh tools (a real probe). Reads are GET .../tools[?cwd=]; a change is PUT or DELETE
// .../tools/{tool}[?cwd=] (grants bump no connector revision, so there is none to send), and each
// shows its runtime_reload outcome.

import { announce } from "./announce.js";
import { api, ApiError, connectorPath, reloadOutcome } from "./api.js";
import { registerTab } from "./detail.js";
import { openDialog } from "./dialog.js";
import { clone, setText, show, slot } from "./dom.js";
import { formatNumber, t } from "./i18n.js";
import { showFailure, showSaved } from "./outcome.js";

const HINTS = [
  ["readOnlyHint", "tools_hint_read_only"],
  ["destructiveHint", "tools_hint_destructive"],
  ["idempotentHint", "tools_hint_idempotent"],
  ["openWorldHint", "tools_hint_open_world"],
];
const HIDDEN_SOURCES = new Set(["disabled", "excluded", "not_included"]);
const $ = (id) => document.getElementById(id);

const state = {
  connector: null, // the ConnectorDetail the tab shows
  context: null, // detail.js's context (reload, replace)
  scope: "", // "" for the global defaults, else a workspace's absolute path
  typed: new Set(), // workspaces typed in this page (kept in memory only)
  list: null, // the API's ToolList for the scope
  error: null,
  query: "",
  decision: "",
  token: 0, // the latest load; an older answer is dropped
  working: false, // a probe or bulk apply in flight
  wired: false,
};
const rows = new Map(); // tool name -> its <li>
let rowCount = 0; // for ids unique in the page

function decisionLabel(decision) {
  return t(`tools_decision_${decision}`);
}

function toolsPath(suffix = "") {
  const path = connectorPath(state.connector.connector_id, suffix);
  return state.scope ? `${path}?cwd=${encodeURIComponent(state.scope)}` : path;
}

function toolPath(name) {
  return toolsPath(`/tools/${encodeURIComponent(name)}`);
}

/** Why the tool's control cannot change it here, or null when it can. */
function lockReason(tool) {
  if (HIDDEN_SOURCES.has(tool.source)) return t(`tools_src_${tool.source}`);
  if (state.scope && tool.source === "global_deny") return t("tools_locked_global_deny");
  return null;
}

/** The grant of the scope shown (a project override, or the global default). */
function ownGrant(tool) {
  return state.scope ? tool.project_grant : tool.global_grant;
}

function sourceText(tool) {
  const lock = lockReason(tool);
  if (lock) return lock;
  if (tool.source === "project_grant") return t("tools_src_project_grant");
  const what = t(`tools_src_${tool.source === "global_deny" ? "global_grant" : tool.source}`);
  return state.scope ? t("tools_inherited", { what }) : what;
}

function matches(tool) {
  if (state.decision && tool.decision !== state.decision) return false;
  if (!state.query) return true;
  const needle = state.query.toLocaleLowerCase();
  return tool.name.toLocaleLowerCase().includes(needle) || (tool.description ?? "").toLocaleLowerCase().includes(needle);
}

function annotations(name) {
  const cached = state.connector?.cache?.tools?.find((tool) => tool.name === name);
  return cached?.annotations ?? {};
}

// --- rendering ------------------------------------------------------------------------------

function buildRow(tool) {
  const row = clone("tpl-tool");
  row.dataset.tool = tool.name;
  slot(row, "source").id = `tool-source-${++rowCount}`;
  const group = slot(row, "decision");
  // Arrow keys move the checked radio at every press: a keyboard choice is saved once, with
  // Enter or Space or when the focus leaves the row's control, so passing Ask on the way from
  // Deny to Allow saves nothing. A pointer choice is saved at once.
  let pointer = false;
  group.addEventListener("pointerdown", () => {
    pointer = true;
  });
  group.addEventListener("keydown", (event) => {
    if ((event.key === "Enter" || event.key === " ") && row.dataset.pending) {
      event.preventDefault();
      commitPending(row);
    }
  });
  group.addEventListener("focusout", (event) => {
    if (!group.contains(event.relatedTarget)) commitPending(row);
  });
  for (const input of group.querySelectorAll("input")) {
    input.name = `tool-decision:${tool.name}`;
    input.addEventListener("change", () => {
      if (!input.checked) return;
      if (pointer) {
        pointer = false;
        delete row.dataset.pending;
        setDecision(row.dataset.tool, input.value);
        return;
      }
      row.dataset.pending = input.value;
      setStatus(t("tools_key_pending", { tool: row.dataset.tool, decision: decisionLabel(input.value) }));
    });
    // choosing the value already in effect (a default, or an inherited one) makes it this scope's
    // own setting; no change event fires for it
    input.addEventListener("click", () => {
      const current = state.list?.tools.find((each) => each.name === row.dataset.tool);
      if (current && current.decision === input.value && ownGrant(current) !== input.value) {
        setDecision(current.name, input.value);
      }
    });
  }
  slot(row, "inherit").addEventListener("click", () => clearGrant(row.dataset.tool));
  return row;
}

function commitPending(row) {
  const decision = row.dataset.pending;
  if (!decision) return;
  delete row.dataset.pending;
  setDecision(row.dataset.tool, decision);
}

function updateRow(row, tool) {
  setText(row, "name", tool.name);
  const hints = slot(row, "hints");
  const notes = annotations(tool.name);
  hints.replaceChildren(
    ...HINTS.filter(([key]) => notes[key] === true).map(([key, label]) => {
      const hint = clone("tpl-tool-hint");
      hint.dataset.hint = key;
      hint.textContent = t(label);
      return hint;
    }),
  );
  setText(row, "description", tool.description || t("no_description"));
  setText(row, "legend", t("tools_decision_for", { tool: tool.name }));
  const lock = lockReason(tool);
  row.dataset.decision = tool.decision;
  row.dataset.source = tool.source;
  row.toggleAttribute("data-locked", Boolean(lock));
  row.toggleAttribute("data-inherited", Boolean(state.scope) && tool.project_grant === null);
  const group = slot(row, "decision");
  group.disabled = Boolean(lock) || state.working;
  for (const input of group.querySelectorAll("input")) {
    input.checked = input.value === (row.dataset.pending ?? tool.decision); // a keyboard choice not saved yet stays
  }
  group.setAttribute("aria-describedby", setText(row, "source", sourceText(tool)).id);
  const inherit = slot(row, "inherit");
  const own = ownGrant(tool);
  show(inherit, own !== null && own !== undefined);
  inherit.disabled = state.working;
  inherit.textContent = state.scope ? t("tools_inherit") : t("tools_reset");
  inherit.setAttribute(
    "aria-label",
    state.scope ? t("tools_inherit_label", { tool: tool.name }) : t("tools_reset_label", { tool: tool.name }),
  );
  show(row, matches(tool));
}

function shownTools() {
  return (state.list?.tools ?? []).filter(matches);
}

function renderCounts() {
  const tools = state.list?.tools ?? [];
  const allowed = tools.filter((tool) => tool.decision === "allow").length;
  $("tools-count").textContent = t("tools_allowed_count", {
    allowed: formatNumber(allowed),
    total: formatNumber(tools.length),
  });
  const shown = shownTools();
  setText($("tools-body"), "bulk-label", t("tools_bulk_label", { count: formatNumber(shown.length) }));
  const changeable = shown.filter((tool) => !lockReason(tool));
  for (const button of document.querySelectorAll("#tools-body [data-bulk]")) {
    button.disabled = state.working || changeable.length === 0;
  }
  show($("tools-nomatch"), tools.length > 0 && shown.length === 0);
}

function renderScopeNote() {
  const note = slot($("panel-tools"), "scope-note");
  if (!state.scope) {
    note.textContent = t("tools_scope_global");
  } else if (state.list?.project) {
    note.textContent = t("tools_scope_project", { path: state.list.project.path });
  } else {
    note.textContent = t("tools_scope_new_project", { path: state.scope });
  }
}

function renderTools() {
  const list = state.list;
  show($("tools-loading"), list === null && state.error === null);
  const error = $("tools-error");
  show(error, state.error !== null);
  if (state.error) {
    setText(error, "message", state.error.message);
    setText(error, "code", state.error.code ? t("error_code", { code: state.error.code }) : "");
  }
  renderScopeNote();
  const empty = $("tools-empty");
  const tools = list?.tools ?? [];
  const none = list !== null && tools.length === 0;
  show(empty, none);
  if (none) empty.textContent = list.cache === "fresh" ? t("tools_none") : t(`tools_cache_${list.cache}`);
  show($("tools-body"), list !== null && tools.length > 0);
  if (list === null) return;
  const ul = $("tools-list");
  const names = new Set(tools.map((tool) => tool.name));
  for (const [name, row] of rows) {
    if (!names.has(name)) {
      row.remove();
      rows.delete(name);
    }
  }
  for (const [index, tool] of tools.entries()) {
    let row = rows.get(tool.name);
    if (!row) {
      row = buildRow(tool);
      rows.set(tool.name, row);
    }
    updateRow(row, tool);
    // the API's order; a row already in place stays put (moving it would drop the focus in it)
    if (ul.children[index] !== row) ul.insertBefore(row, ul.children[index] ?? null);
  }
  renderCounts();
}

function rerenderRows() {
  for (const tool of state.list?.tools ?? []) {
    const row = rows.get(tool.name);
    if (row) updateRow(row, tool);
  }
  renderCounts();
}

// --- loading --------------------------------------------------------------------------------

async function loadTools() {
  const token = ++state.token;
  const connector = state.connector;
  try {
    const list = await api.get(toolsPath("/tools"));
    if (token !== state.token || connector !== state.connector) return;
    state.list = list;
    state.error = null;
  } catch (error) {
    if (token !== state.token) return;
    state.list = null;
    state.error = error;
  }
  renderTools();
}

async function loadWorkspaces() {
  // the known projects and the workspaces of open sessions (one may not be a project yet); both
  // are a convenience: a path can always be typed
  const known = [];
  const [projects, sessions] = await Promise.allSettled([api.get("/api/projects"), api.get("/api/sessions")]);
  if (projects.status === "fulfilled") known.push(...projects.value.projects.map((project) => project.path));
  if (sessions.status === "fulfilled") known.push(...sessions.value.sessions.map((session) => session.workspace));
  const paths = [...new Set([...known, ...state.typed, ...(state.scope ? [state.scope] : [])])].sort();
  const select = $("tools-scope");
  const global = select.options[0];
  select.replaceChildren(
    global,
    ...paths.map((path) => {
      const option = document.createElement("option");
      option.value = path;
      option.textContent = path;
      return option;
    }),
  );
  select.value = state.scope;
  $("tools-workspaces").replaceChildren(
    ...paths.map((path) => {
      const option = document.createElement("option");
      option.value = path;
      return option;
    }),
  );
}

function changeScope(scope) {
  state.scope = scope;
  state.list = null;
  state.error = null;
  $("tools-scope").value = scope;
  renderTools();
  announce(scope ? t("tools_scope_changed_project", { path: scope }) : t("tools_scope_changed_global"));
  loadTools();
}

// --- changes --------------------------------------------------------------------------------

function setStatus(text) {
  const status = $("tools-status");
  status.textContent = text;
  show(status, Boolean(text));
}

function statusOf(runtimeReload, what) {
  const kind = reloadOutcome(runtimeReload).kind;
  const outcome = { saved: t("saved"), pending: t("saved_pending"), failed: t("saved_failed") }[kind];
  return t("what_then_outcome", { what, outcome });
}

async function afterFailure(error) {
  showFailure(error);
  setStatus(error.message);
  if (error instanceof ApiError && error.code === "not_found") {
    await state.context?.reload(); // the connector is gone: the pane says so
    return;
  }
  await loadTools(); // show what is saved, not what was tried
}

// Writes go one at a time, in the order chosen: two PUTs for one tool in flight at once could
// land in either order. The list is read back once no write is waiting.
let queue = Promise.resolve();
let queued = 0;

function enqueue(job) {
  queued += 1;
  const run = queue.then(job).finally(() => {
    queued -= 1;
  });
  queue = run.catch(() => {});
  return run;
}

async function readBack() {
  if (queued === 1) await loadTools(); // the last write waiting: show what is saved
}

async function setDecision(name, decision) {
  const tool = state.list?.tools.find((each) => each.name === name);
  if (!tool) return;
  // at once: the control, the source line and the count follow the choice; the answer corrects
  tool.decision = decision;
  tool.source = state.scope ? "project_grant" : "global_grant";
  if (state.scope) tool.project_grant = decision;
  else tool.global_grant = decision;
  rerenderRows();
  const path = toolPath(name);
  await enqueue(async () => {
    try {
      const answer = await api.put(path, { decision });
      const what = t("tools_set", { tool: name, decision: decisionLabel(decision) });
      showSaved(answer.runtime_reload, what);
      setStatus(statusOf(answer.runtime_reload, what));
      await readBack();
    } catch (error) {
      await afterFailure(error);
    }
  });
}

async function clearGrant(name) {
  const path = toolPath(name);
  await enqueue(async () => {
    try {
      const answer = await api.delete(path);
      const what = state.scope ? t("tools_inherited_now", { tool: name }) : t("tools_reset_now", { tool: name });
      showSaved(answer.runtime_reload, what);
      setStatus(statusOf(answer.runtime_reload, what));
      await loadTools();
      rows.get(name)?.querySelector("input:checked")?.focus();
    } catch (error) {
      await afterFailure(error);
    }
  });
}

function setWorking(working, label = "") {
  state.working = working;
  const progress = $("tools-progress");
  setText(progress, "label", label);
  show(progress, working);
  $("tools-refresh").disabled = working;
  $("panel-tools").setAttribute("aria-busy", String(working));
  rerenderRows();
}

/** The worst of several runtime_reload answers (failed > pending > saved), to show once. */
function worstReload(reloads) {
  const rank = { saved: 0, pending: 1, failed: 2 };
  return reloads.reduce(
    (worst, each) => (rank[reloadOutcome(each).kind] > rank[reloadOutcome(worst).kind] ? each : worst),
    reloads[0],
  );
}

async function bulkApply(decision, opener) {
  const targets = shownTools().filter((tool) => !lockReason(tool) && ownGrant(tool) !== decision);
  if (decision === "allow") {
    const dialog = $("tools-allow-all");
    setText(dialog, "text", t("tools_allow_all_text", { count: formatNumber(targets.length) }));
    const answer = await openDialog(dialog, { opener });
    if (answer !== "confirm") {
      announce(t("tools_bulk_cancelled"));
      return;
    }
  }
  const paths = targets.map((tool) => toolPath(tool.name));
  await enqueue(async () => {
    const reloads = [];
    let failure = null;
    for (const [index, path] of paths.entries()) {
      setWorking(true, t("tools_bulk_progress", { done: formatNumber(index), count: formatNumber(paths.length) }));
      try {
        reloads.push((await api.put(path, { decision })).runtime_reload);
      } catch (error) {
        failure = error;
        break;
      }
    }
    setWorking(false);
    if (failure) {
      await afterFailure(failure);
      return;
    }
    const what = t("tools_bulk_done", { decision: decisionLabel(decision), count: formatNumber(paths.length) });
    const reload = reloads.length ? worstReload(reloads) : { sessions: [] };
    showSaved(reload, what);
    setStatus(statusOf(reload, what));
    await loadTools();
  });
}

async function refresh() {
  const name = state.connector.display_name || state.connector.name;
  setWorking(true, t("tools_probing", { name }));
  announce(t("tools_probing", { name }));
  let report;
  try {
    report = await api.post(toolsPath("/probe"));
  } catch (error) {
    setWorking(false);
    await afterFailure(error);
    return;
  }
  setWorking(false);
  if (report.state === "ready") {
    const what = t("tools_refreshed", { count: formatNumber(report.tool_count) });
    showSaved(report.runtime_reload, what);
    setStatus(statusOf(report.runtime_reload, what));
  } else {
    const error = new ApiError(200, report.code ?? "unknown", report.message ?? t("tools_probe_failed"));
    showFailure(error);
    setStatus(`${error.message} (${error.code})`);
  }
  await state.context?.reload(); // the new catalog, its annotations and the probe's outcome
}

// --- wiring ---------------------------------------------------------------------------------

function wire() {
  state.wired = true;
  $("tools-scope").addEventListener("change", (event) => changeScope(event.target.value));
  $("tools-workspace-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $("tools-workspace");
    const path = input.value.trim();
    if (!path.startsWith("/")) {
      setStatus(t("tools_workspace_absolute"));
      announce(t("tools_workspace_absolute"));
      input.focus();
      return;
    }
    state.typed.add(path);
    input.value = "";
    changeScope(path);
    loadWorkspaces();
  });
  $("tools-search").addEventListener("input", (event) => {
    state.query = event.target.value.trim();
    rerenderRows();
  });
  $("tools-decision-filter").addEventListener("change", (event) => {
    state.decision = event.target.value;
    rerenderRows();
  });
  for (const button of document.querySelectorAll("#tools-body [data-bulk]")) {
    button.addEventListener("click", () => bulkApply(button.dataset.bulk, button));
  }
  $("tools-refresh").addEventListener("click", () => refresh());
}

/** The tab's renderer (detail.js): a new connector starts with no filter; the scope stays. */
export function renderToolsTab(panel, connector, context) {
  if (!state.wired) wire();
  if (state.connector?.connector_id !== connector.connector_id) {
    for (const row of rows.values()) row.remove();
    rows.clear();
    state.list = null;
    state.query = "";
    state.decision = "";
    $("tools-search").value = "";
    $("tools-decision-filter").value = "";
    setStatus("");
  }
  state.connector = connector;
  state.context = context;
  state.error = null;
  renderTools();
  loadTools();
  loadWorkspaces();
}

registerTab("tools", renderToolsTab);
