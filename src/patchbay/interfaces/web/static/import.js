// The Import dialog: paste an mcpServers snippet or pick config files found on this machine,
// preview every entry (POST /api/mcp/import/preview: nothing is started, run or connected), then
// import only the selected ones (POST /api/mcp/import/commit, which reads the same source again).
// It opens on the document event "patchbay:open-import" (detail: {opener}, where focus returns);
// after an import it dispatches "patchbay:connectors-changed" ({filter: "imported"}) so the list
// reloads. The pasted text lives in the textarea only: never stored, cleared when the dialog closes.

import { announce } from "./announce.js";
import { api, ApiError, reloadOutcome } from "./api.js";
import { openDialog } from "./dialog.js";
import { clone, setText, show, slot } from "./dom.js";
import { formatNumber, t } from "./i18n.js";
import { showSaved } from "./outcome.js";

const $ = (id) => document.getElementById(id);
const TRANSPORTS = new Set(["stdio", "streamable_http", "sse", "socket"]);
// product names, the same in every language
const HOSTS = { "claude-desktop": "Claude Desktop", "claude-code": "Claude Code", cursor: "Cursor", vscode: "VS Code" };

const state = {
  source: "paste",
  candidates: null, // GET /api/mcp/import/sources, once per opening
  request: null, // the source the shown preview read ({text} or {paths}); a commit reads it again
  preview: null,
  renames: {}, // entry name → connector name, applied by the shown preview (and sent with the commit)
  taken: new Set(), // the existing connector names (lowercase), for a free rename suggestion
  busy: false,
};

// --- small helpers ---------------------------------------------------------------------------

function item(text) {
  const li = document.createElement("li");
  li.textContent = text;
  return li;
}

function showProblem(box, message, code) {
  setText(box, "message", message);
  setText(box, "code", code ? t("error_code", { code }) : "");
  show(box);
}

function failure(error) {
  const known = error instanceof ApiError ? error : new ApiError(0, "unknown", String(error));
  showProblem($("import-failure"), known.message, known.code);
  announce(known.message);
}

function clearFailure() {
  show($("import-failure"), false);
  show($("import-parse-error"), false);
}

function setBusy(busy) {
  state.busy = busy;
  for (const id of ["import-preview", "import-commit"]) {
    $(id).setAttribute("aria-disabled", String(busy));
  }
  $("import-dialog").setAttribute("aria-busy", String(busy));
}

// --- the source: paste or files ------------------------------------------------------------

function setSource(source) {
  state.source = source;
  show($("import-paste"), source === "paste");
  show($("import-files"), source === "files");
  staleReview();
  if (source === "files" && state.candidates === null) loadCandidates();
}

function fileKind(file, workspace) {
  if (file.kind === "host") return HOSTS[file.select] ?? file.select;
  return file.path.startsWith(`${workspace}/`) ? t("import_file_project") : t("import_file_user");
}

async function loadCandidates() {
  show($("import-files-loading"));
  show($("import-files-found"), false);
  show($("import-files-none"), false);
  show($("import-files-error"), false);
  try {
    state.candidates = await api.get("/api/mcp/import/sources");
  } catch (error) {
    show($("import-files-loading"), false);
    showProblem($("import-files-error"), error.message, error.code);
    return;
  }
  const found = state.candidates.files.filter((file) => file.exists);
  const list = slot($("import-files-found"), "list");
  list.replaceChildren(
    ...found.map((file, index) => {
      const row = clone("tpl-import-file");
      const check = slot(row, "check");
      check.id = `import-file-${index}`;
      check.value = file.select;
      check.addEventListener("change", staleReview);
      setText(row, "label", fileKind(file, state.candidates.workspace));
      setText(row, "path", file.path);
      return row;
    }),
  );
  show($("import-files-loading"), false);
  show($("import-files-found"), found.length > 0);
  show($("import-files-none"), found.length === 0);
  announce(t("import_files_found", { count: formatNumber(found.length) }));
}

/** The request body for the chosen source, or null (and a message) when there is nothing yet. */
function sourceRequest() {
  if (state.source === "paste") {
    const text = $("import-text").value;
    if (!text.trim()) {
      showProblem($("import-failure"), t("import_paste_first"), "");
      $("import-text").focus();
      return null;
    }
    return { text };
  }
  const paths = [...document.querySelectorAll("#import-files-found input:checked")].map((box) => box.value);
  if (!paths.length) {
    showProblem($("import-failure"), t("import_pick_first"), "");
    return null;
  }
  return { paths };
}

// --- the preview ---------------------------------------------------------------------------

function staleReview() {
  // the shown preview no longer matches the source: never commit what the person did not see
  state.request = null;
  state.preview = null;
  state.renames = {};
  show($("import-review"), false);
  show($("import-commit"), false);
}

function transportLabel(transport) {
  return TRANSPORTS.has(transport) ? t(`transport_${transport}`) : t("import_transport_unknown");
}

function targetText(target) {
  if (!target) return "";
  if (target.command !== undefined) return [target.command, ...(target.args ?? [])].join(" ");
  return target.url ?? target.socket_path ?? "";
}

function sourceText(source) {
  if (source.origin === "pasted") return t("import_source_pasted");
  const label = source.origin === "named" ? (HOSTS[source.label] ?? source.label) : source.label;
  const where = t("import_source", { label, precedence: formatNumber(source.precedence) });
  return source.scope && source.scope !== "file" ? t("import_source_scope", { source: where, scope: source.scope }) : where;
}

/** Safe to import without a second look: importable, nothing lost, nothing asked for, nothing
 * outside the workspace. Those are selected at first; the rest wait for the person. */
function isSafe(entry) {
  return entry.importable && entry.lossless && !entry.needs_input && !entry.helpers.length && !entry.outside_workspace.length;
}

function facts(entry) {
  const out = [];
  const add = (kind, text, tone) => out.push({ kind, text, tone });
  if (entry.conflict) {
    const key = entry.conflict.same_target ? "import_conflict_same" : "import_conflict_differs";
    add(t("import_fact_conflict"), t(key, { name: entry.conflict.connector }), "danger");
  }
  if (entry.shadowed_by) {
    add(t("import_fact_shadowed"), t("import_shadowed", { source: sourceText(entry.shadowed_by) }), "warn");
  }
  for (const secret of entry.plaintext) {
    add(t("import_fact_secret"), t("import_secret_configured", { field: secret.field }), "info");
  }
  for (const binding of entry.bindings) {
    if (binding.source === "environment") {
      add(t("import_fact_reference"), t("import_binding_env", { field: binding.field, variable: binding.variable }), "info");
    } else if (binding.source === "plain") {
      add(t("import_fact_setting"), t("import_binding_plain", { field: binding.field, value: binding.plain ?? "" }), "info");
    }
  }
  for (const helper of entry.helpers) {
    add(t("import_fact_helper"), t("import_helper", { field: helper.field, program: helper.program }), "danger");
  }
  for (const input of entry.inputs) {
    add(t("import_fact_input"), t("import_input", { field: input.field, id: input.id }), "warn");
  }
  for (const path of entry.outside_workspace) {
    add(t("import_fact_outside"), t("import_outside", { field: path.field, path: path.path }), "warn");
  }
  for (const loss of entry.losses) {
    add(t("import_fact_lossy"), t("import_issue", { field: loss.field, message: loss.message, code: loss.code }), "warn");
  }
  for (const problem of entry.problems) {
    add(t("import_fact_problem"), t("import_issue", { field: problem.field, message: problem.message, code: problem.code }), "danger");
  }
  return out;
}

function renderEntry(entry, index, keep) {
  const row = clone("tpl-import-entry");
  row.dataset.name = entry.name;
  const check = slot(row, "check");
  check.id = `import-entry-${index}`;
  check.value = entry.import_name ?? "";
  check.disabled = !entry.importable;
  check.checked = isSafe(entry);
  check.addEventListener("change", updateCount);
  if (keep.has(index)) check.checked = keep.get(index) && entry.importable;
  const label = slot(row, "label");
  label.htmlFor = check.id;
  setText(row, "name", entry.import_name && entry.import_name !== entry.name ? t("import_renamed", { name: entry.name, connector: entry.import_name }) : entry.name);
  setText(row, "kind", transportLabel(entry.transport));
  const tone = !entry.importable ? "blocked" : isSafe(entry) ? "ready" : "review";
  row.dataset.state = tone;
  setText(row, "state", t(`import_state_${tone}`));
  setText(row, "target", targetText(entry.target));
  setText(row, "source", sourceText(entry.source));
  slot(row, "facts").replaceChildren(
    ...facts(entry).map((fact) => {
      const li = clone("tpl-import-fact");
      li.dataset.tone = fact.tone;
      setText(li, "kind", fact.kind);
      setText(li, "text", fact.text);
      return li;
    }),
  );
  setText(row, "diff", entry.diff.join("\n"));
  renderRename(row, entry, index);
  return row;
}

function selectedNames() {
  return [...document.querySelectorAll("#import-review .import-entry input:checked")].map((box) => box.value);
}

function updateCount() {
  const total = state.preview?.entries.length ?? 0;
  const selected = selectedNames().length;
  setText($("import-review"), "summary", t("import_summary", { count: formatNumber(total), selected: formatNumber(selected) }));
  $("import-commit").textContent = t("import_commit_count", { count: formatNumber(selected) });
}

function positionIndex(text, line, column) {
  const lines = text.split("\n");
  let index = 0;
  for (let i = 0; i < Math.min(line - 1, lines.length); i += 1) index += lines[i].length + 1;
  return Math.min(index + Math.max(column - 1, 0), text.length);
}

/** A pasted text that is no JSONC object: its code and position, the text kept and the caret
 * put where the problem is. Returns whether it was one. */
function showTextProblem(preview) {
  const pasted = preview.files.find((file) => file.origin === "pasted");
  if (!pasted || pasted.status === "ok") return false;
  const box = $("import-parse-error");
  const details = pasted.error?.details ?? {};
  const title =
    pasted.status === "malformed"
      ? t("import_parse_error", { line: formatNumber(details.line ?? 0), column: formatNumber(details.column ?? 0) })
      : t("import_not_an_object");
  setText(box, "title", title);
  setText(box, "message", pasted.error?.message ?? "");
  setText(box, "code", pasted.error?.code ? t("error_code", { code: pasted.error.code }) : "");
  show(box);
  const area = $("import-text");
  area.focus();
  if (details.line) {
    const at = positionIndex(area.value, details.line, details.column ?? 1);
    area.setSelectionRange(at, at);
  }
  announce(title);
  return true;
}

function renderPreview(preview, keep = new Map()) {
  const review = $("import-review");
  const problems = preview.files.filter((file) => file.status !== "ok" && file.status !== "absent" && file.origin !== "pasted");
  slot(review, "files").replaceChildren(
    ...problems.map((file) => {
      const li = item(t("import_file_problem", { label: file.label, message: file.error?.message ?? file.status }));
      if (file.error?.code) li.append(` (${t("error_code", { code: file.error.code })})`);
      return li;
    }),
  );
  show($("import-none-found"), preview.entries.length === 0);
  slot(review, "entries").replaceChildren(...preview.entries.map((entry, index) => renderEntry(entry, index, keep)));
  show(review);
  show($("import-commit"), preview.entries.some((entry) => entry.importable));
  updateCount();
}

async function runPreview({ announceIt = true, again = null } = {}) {
  if (state.busy) return false;
  clearFailure();
  // a fresh Preview reads the source as it is now, without renames; `again` repeats a request
  const request = again ?? sourceRequest();
  if (request === null) return false;
  setBusy(true);
  try {
    const preview = await api.post("/api/mcp/import/preview", request);
    if (showTextProblem(preview)) {
      staleReview();
      return false;
    }
    state.request = request;
    state.preview = preview;
    state.renames = { ...(request.renames ?? {}) };
    await loadTaken(preview);
    renderPreview(preview);
    if (announceIt) {
      $("import-review-title").focus();
      announce(t("import_preview_ready", { count: formatNumber(preview.entries.length), selected: formatNumber(selectedNames().length) }));
    }
    return true;
  } catch (error) {
    staleReview();
    failure(error);
    return false;
  } finally {
    setBusy(false);
  }
}

// --- renaming an entry that conflicts ------------------------------------------------------

/** The existing connector names, read when a preview shows a conflict (for the suggestion). */
async function loadTaken(preview) {
  if (!preview.entries.some((entry) => entry.conflict)) return;
  try {
    const listing = await api.get("/api/mcp/connectors");
    state.taken = new Set(listing.connectors.map((connector) => connector.name.toLowerCase()));
  } catch {
    state.taken = new Set(); // only the suggestion needs it: the server checks the name anyway
  }
}

/** A free connector name for `entry`: its name with -2, -3, ... (at most 64 characters), taken
 * neither by a connector nor by another entry of the preview. */
export function suggestName(base, taken) {
  for (let n = 2; ; n += 1) {
    const suffix = `-${n}`;
    const candidate = `${base.slice(0, 64 - suffix.length)}${suffix}`;
    if (!taken.has(candidate)) return candidate;
  }
}

function takenNames() {
  const taken = new Set(state.taken);
  for (const entry of state.preview?.entries ?? []) if (entry.import_name) taken.add(entry.import_name.toLowerCase());
  for (const name of Object.values(state.renames)) taken.add(name.toLowerCase());
  return taken;
}

function renderRename(row, entry, index) {
  const applied = state.renames[entry.name];
  if (!entry.conflict && applied === undefined) return;
  const box = slot(row, "rename");
  const input = slot(row, "rename-input");
  input.id = `import-rename-${index}`;
  slot(row, "rename-label").htmlFor = input.id;
  const hint = slot(row, "rename-hint");
  hint.id = `${input.id}-hint`;
  const error = slot(row, "rename-error");
  error.id = `${input.id}-error`;
  input.setAttribute("aria-describedby", `${hint.id} ${error.id}`);
  const base = (entry.import_name ?? entry.name).toLowerCase();
  input.value = applied ?? suggestName(base, takenNames());
  input.addEventListener("input", () => {
    show(error, false);
    input.removeAttribute("aria-invalid");
  });
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    event.preventDefault();
    applyRename(entry, input, index);
  });
  slot(row, "rename-apply").addEventListener("click", () => applyRename(entry, input, index));
  show(box);
}

function renameError(input, message) {
  const error = document.getElementById(`${input.id}-error`);
  error.textContent = message;
  show(error);
  input.setAttribute("aria-invalid", "true");
  input.focus();
  announce(message);
}

/** A rename typed but not applied yet: said at its field (the commit would not use it). */
function pendingRename() {
  for (const [index, entry] of (state.preview?.entries ?? []).entries()) {
    const input = document.getElementById(`import-rename-${index}`);
    const applied = state.renames[entry.name];
    if (input && applied !== undefined && input.value.trim() !== applied) {
      renameError(input, t("import_rename_pending"));
      return true;
    }
  }
  return false;
}

/** Preview again with `entry` renamed to the field's name: the server validates it (a bad name
 * is shown at the field, the preview kept) and reports whether it still conflicts. */
async function applyRename(entry, input, index) {
  if (state.busy || state.request === null) return;
  clearFailure();
  const name = input.value.trim();
  if (!name) {
    renameError(input, t("field_required"));
    return;
  }
  const renames = { ...state.renames, [entry.name]: name };
  const request = { ...state.request, renames };
  const keep = new Map();
  for (const [i, shown] of state.preview.entries.entries()) {
    const box = document.getElementById(`import-entry-${i}`);
    if (shown.importable && box) keep.set(i, box.checked);
  }
  setBusy(true);
  let preview;
  try {
    preview = await api.post("/api/mcp/import/preview", request);
  } catch (error) {
    setBusy(false);
    if (error instanceof ApiError && error.status === 422) {
      renameError(input, t("import_rename_refused", { message: error.message, code: error.code }));
    } else {
      failure(error);
    }
    return;
  }
  setBusy(false);
  state.request = request;
  state.renames = renames;
  state.preview = preview;
  renderPreview(preview, keep);
  const now = preview.entries[index];
  const field = document.getElementById(`import-rename-${index}`);
  if (field) field.focus();
  const said = now?.conflict
    ? t("import_rename_conflicts", { name: now.import_name ?? name })
    : t("import_rename_applied", { name: entry.name, connector: now?.import_name ?? name });
  announce(said);
}

// --- the commit ----------------------------------------------------------------------------

function skippedReason(entry) {
  return entry.importable ? t("import_skipped_unselected", { name: entry.name }) : t("import_skipped_blocked", { name: entry.name });
}

function renderResult(committed, selected) {
  const result = $("import-result");
  const count = committed.imported.length;
  setText(result, "title", t("import_done", { count: formatNumber(count) }));
  const { kind, sessions } = reloadOutcome(committed.runtime_reload);
  setText(result, "outcome", { saved: t("saved"), pending: t("saved_pending"), failed: t("saved_failed") }[kind]);
  result.dataset.kind = kind;
  slot(result, "sessions").replaceChildren(
    ...sessions.map((session) =>
      item(
        session.status === "failed"
          ? t("session_failed", { workspace: session.workspace, message: session.error?.message ?? "" })
          : t("session_pending", { workspace: session.workspace }),
      ),
    ),
  );
  slot(result, "imported").replaceChildren(...committed.imported.map((imported) => item(imported.connector)));
  const skipped = state.preview.entries.filter((entry) => !selected.includes(entry.import_name ?? ""));
  slot(result, "skipped").replaceChildren(...skipped.map((entry) => item(skippedReason(entry))));
  show(slot(result, "skipped-block"), skipped.length > 0);
  show($("import-form"), false);
  show($("import-review"), false);
  show($("import-commit"), false);
  $("import-close").textContent = t("import_close");
  show(result);
  $("import-result-title").focus();
}

async function commit() {
  if (state.busy || state.request === null) return;
  clearFailure();
  const select = selectedNames();
  if (!select.length) {
    showProblem($("import-failure"), t("import_select_first"), "");
    announce(t("import_select_first"));
    return;
  }
  if (pendingRename()) return;
  setBusy(true);
  const request = state.request;
  let committed;
  try {
    committed = await api.post("/api/mcp/import/commit", {
      ...state.request,
      select,
      enabled: $("import-enable").checked,
    });
  } catch (error) {
    setBusy(false);
    // the files or the connectors changed since the preview (a name taken meanwhile): show
    // what is true now, and why nothing was imported
    await runPreview({ announceIt: false, again: request });
    failure(error);
    return;
  }
  setBusy(false);
  renderResult(committed, select);
  showSaved(committed.runtime_reload, t("import_done", { count: formatNumber(committed.imported.length) }));
  document.dispatchEvent(new CustomEvent("patchbay:connectors-changed", { detail: { filter: "imported" } }));
}

// --- opening and closing -------------------------------------------------------------------

function reset() {
  state.candidates = null;
  state.busy = false;
  staleReview();
  $("import-text").value = "";
  $("import-enable").checked = false;
  for (const radio of document.querySelectorAll('input[name="import-source"]')) radio.checked = radio.value === "paste";
  setSource("paste");
  clearFailure();
  show($("import-form"));
  show($("import-result"), false);
  $("import-close").textContent = t("import_cancel");
  $("import-dialog").removeAttribute("aria-busy");
}

function open(opener) {
  const dialog = $("import-dialog");
  if (dialog.open) return;
  reset();
  // the text may hold secrets: it leaves the page when the dialog closes
  openDialog(dialog, { opener }).then(reset);
}

export function startImportDialog() {
  const dialog = $("import-dialog");
  if (!dialog) return;
  for (const radio of document.querySelectorAll('input[name="import-source"]')) {
    radio.addEventListener("change", () => setSource(radio.value));
  }
  $("import-text").addEventListener("input", () => {
    show($("import-parse-error"), false);
    if (state.request !== null) staleReview();
  });
  $("import-preview").addEventListener("click", () => runPreview());
  $("import-commit").addEventListener("click", () => commit());
  $("import-close").addEventListener("click", () => dialog.close(""));
  document.addEventListener("patchbay:open-import", (event) => open(event.detail?.opener ?? document.activeElement));
}

startImportDialog();
