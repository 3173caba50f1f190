// The Add/Edit connector form (templates/_connector_form.html): one dialog for a local command,
// a remote URL or a Unix socket. Add is POST /api/mcp/connectors; Edit is PATCH with the
// revision the form was filled from; tool filters are PUT .../settings with the settings revision.
// A lost revision race closes the form, reloads the view and writes nothing more. Field errors
// of the API (its `code` and `details.field`) are shown next to the field with the values kept.
// Closing a changed form (Escape, Cancel, leaving the page) asks first. Secret values go to the
// credential store through the API's bindings and are never shown again; nothing typed here is
// stored in the browser.
//
//   import { openConnectorForm } from "./connector_form.js";
//   openConnectorForm({ kind: "local", opener });           // add
//   openConnectorForm({ connector: detail, opener });       // edit (the API's ConnectorDetail)

import { api, ApiError, connectorPath, isRevisionConflict } from "./api.js";
import { closeDialog, openDialog } from "./dialog.js";
import { clone, show, slot } from "./dom.js";
import { formatNumber, t } from "./i18n.js";
import { oauthFieldsTouched, saveOAuthConfig } from "./oauth_form.js";
import { showFailure } from "./outcome.js";
import { shlexJoin, shlexSplit, ShlexError } from "./shlex.js";

const $ = (id) => document.getElementById(id);
const KIND_OF_TRANSPORT = { stdio: "local", streamable_http: "remote", sse: "remote", socket: "socket" };
// The API's details.field (its last dotted part) → the element its error is shown under
const FIELD_ELEMENTS = {
  name: "cf-name",
  display_name: "cf-display",
  description: "cf-description",
  command: "cf-command",
  args: "cf-command",
  cwd: "cf-cwd",
  url: "cf-url",
  socket_path: "cf-socket",
  path: "cf-socket",
  lifecycle: "cf-lifecycle",
  request_timeout: "cf-request-timeout",
  idle_timeout: "cf-idle-timeout",
  include_tools: "cf-include",
  exclude_tools: "cf-exclude",
  terms_url: "cf-terms",
  privacy_url: "cf-privacy",
  header: "cf-header-name",
  env: "cf-env-add",
  transport: "cf-transport",
  allow_private: "cf-allow-private",
};

const form = {
  mode: "add",
  kind: "local",
  connector: null, // the ConnectorDetail being edited
  initial: "", // the snapshot the form opened with (dirty when it differs)
  auth: { kind: "none", header: "" }, // the remote authentication the connector had
  envRows: [], // the env bindings the connector had: {name, source}
  saving: false,
  closing: false,
};
let rowCounter = 0;
// "Auto (detect)": offered by Add only (the server detects the transport once and stores it;
// Edit keeps the stored one). Taken out of the select while editing, put back first for Add.
let autoTransport = null;

function dialog() {
  return $("connector-form-dialog");
}

function splitPatterns(text) {
  return text
    .split(",")
    .map((p) => p.trim())
    .filter(Boolean);
}

function numberOrNull(text) {
  return text.trim() === "" ? null : Number(text);
}

// --- the fields -------------------------------------------------------------------------------

function showKind() {
  const root = dialog();
  for (const element of root.querySelectorAll("[data-kinds]")) {
    show(element, element.dataset.kinds.split(" ").includes(form.kind));
  }
  for (const element of root.querySelectorAll("[data-modes]")) {
    show(element, element.dataset.modes.split(" ").includes(form.mode));
  }
  showBuiltinTarget();
  showAuth();
}

// A built-in's command is fixed (the API refuses to change it): Edit hides the command and the
// working directory, and the target is never sent (the fields keep the stored values).
function showBuiltinTarget() {
  const builtin = form.mode === "edit" && form.connector?.source === "builtin";
  if (builtin) for (const id of ["cf-command", "cf-cwd"]) show($(id).closest(".field"), false);
  show($("cf-builtin-command"), builtin);
}

function showAuth() {
  const auth = $("cf-auth").value;
  for (const element of dialog().querySelectorAll("[data-auth]")) {
    show(element, element.dataset.auth.split(" ").includes(auth));
  }
  const configured = form.mode === "edit" && form.auth.kind === auth && (auth === "bearer" || auth === "header");
  show($("cf-auth-configured"), configured);
}

function renderPreview() {
  const preview = $("cf-preview");
  const line = $("cf-command").value;
  const list = slot(preview, "words");
  const error = slot(preview, "error");
  let words = [];
  let problem = "";
  try {
    words = shlexSplit(line);
  } catch (caught) {
    if (!(caught instanceof ShlexError)) throw caught;
    problem = shlexMessage(caught);
  }
  list.replaceChildren(
    ...words.map((word, index) => {
      const item = clone("tpl-preview-word");
      slot(item, "word").textContent = word;
      slot(item, "role").textContent = index === 0 ? t("preview_command") : t("preview_arg", { n: formatNumber(index) });
      return item;
    }),
  );
  show(slot(preview, "empty"), words.length === 0 && !problem);
  show(slot(preview, "operators"), words.some(looksLikeShellSyntax));
  error.textContent = problem;
  show(error, Boolean(problem));
}

const SHELL_OPERATORS = new Set([";", "|", "||", "&", "&&", ">", ">>", "<", "<<", "2>", "2>&1", "&>"]);

/** A word a person may have meant as shell syntax: an operator, or a command glued to one. */
function looksLikeShellSyntax(word, index) {
  return SHELL_OPERATORS.has(word) || /[;|&<>`]/.test(index === 0 ? word : word.slice(-1)) || word.startsWith("$(");
}

function shlexMessage(error) {
  return error.code === "trailing_backslash"
    ? t("shlex_trailing_backslash")
    : t("shlex_unterminated_quote", { position: formatNumber(error.position + 1) });
}

function addEnvRow({ name = "", source = "plain", value = "", configured = false } = {}) {
  const row = clone("tpl-env-row");
  rowCounter += 1;
  for (const part of ["name", "source", "value"]) {
    const id = `cf-env-${rowCounter}-${part}`;
    slot(row, part).id = id;
    slot(row, `${part}-label`).htmlFor = id;
  }
  slot(row, "name").value = name;
  slot(row, "source").value = source;
  const input = slot(row, "value");
  input.value = value;
  row.dataset.configured = String(configured);
  const fit = () => {
    const kind = slot(row, "source").value;
    input.type = kind === "secret" ? "password" : "text";
    input.placeholder = kind === "secret" && row.dataset.configured === "true" ? t("secret_configured") : kind === "variable" ? "API_TOKEN" : "";
  };
  slot(row, "source").addEventListener("change", fit);
  fit();
  const remove = slot(row, "remove");
  const label = () => remove.setAttribute("aria-label", t("env_remove", { name: slot(row, "name").value || t("env_unnamed") }));
  slot(row, "name").addEventListener("input", label);
  label();
  remove.addEventListener("click", () => {
    const next = row.nextElementSibling?.querySelector("input") ?? $("cf-env-add");
    row.remove();
    next.focus();
  });
  $("cf-env-rows").append(row);
  return row;
}

function envRows() {
  return [...$("cf-env-rows").children].map((row) => ({
    name: slot(row, "name").value.trim(),
    source: slot(row, "source").value,
    value: slot(row, "value").value,
    configured: row.dataset.configured === "true",
    element: row,
  }));
}

function snapshot() {
  const values = [...dialog().querySelectorAll("input, select, textarea")].map((el) =>
    el.type === "checkbox" ? el.checked : el.value,
  );
  return JSON.stringify(values);
}

/** Whether the form holds something its opening values did not. */
export function isDirty() {
  return dialog()?.open === true && snapshot() !== form.initial;
}

function reset() {
  const formElement = $("connector-form");
  formElement.reset();
  $("cf-env-rows").replaceChildren();
  clearErrors();
  $("cf-advanced").open = false;
  $("cf-name").readOnly = false;
  $("cf-name").removeAttribute("aria-readonly");
}

function fill(connector) {
  const target = connector.target;
  $("cf-name").value = connector.name;
  $("cf-name").readOnly = true;
  $("cf-name").setAttribute("aria-readonly", "true");
  $("cf-display").value = connector.display_name ?? "";
  $("cf-description").value = connector.description ?? "";
  $("cf-terms").value = connector.terms_url ?? "";
  $("cf-privacy").value = connector.privacy_url ?? "";
  if (target.transport === "stdio") {
    $("cf-command").value = shlexJoin([target.command, ...target.args]);
    $("cf-cwd").value = target.cwd ?? "";
  } else if (target.transport === "socket") {
    $("cf-socket").value = target.path;
  } else {
    $("cf-url").value = target.url;
    $("cf-transport").value = target.transport;
  }
  const options = connector.runtime_options ?? {};
  $("cf-allow-private").checked = options.allow_private === true;
  $("cf-lifecycle").value = options.lifecycle ?? "lazy";
  $("cf-request-timeout").value = options.request_timeout ?? "";
  $("cf-idle-timeout").value = options.idle_timeout ?? "";
  $("cf-include").value = connector.settings.include_tools.join(", ");
  $("cf-exclude").value = connector.settings.exclude_tools.join(", ");
  form.auth = { kind: "none", header: "" };
  form.envRows = [];
  for (const binding of connector.bindings ?? []) {
    if (binding.delivery === "env") {
      const source = binding.source === "plain" ? "plain" : binding.source === "environment" ? "variable" : "secret";
      form.envRows.push({ name: binding.name, source });
      addEnvRow({
        name: binding.name,
        source,
        value: source === "plain" ? (binding.plain ?? "") : source === "variable" ? (binding.variable ?? "") : "",
        configured: source === "secret",
      });
    } else if (binding.delivery === "bearer") {
      form.auth = binding.source === "environment" ? { kind: "env", header: "" } : { kind: "bearer", header: "" };
      if (binding.source === "environment") $("cf-variable").value = binding.variable ?? "";
    } else if (binding.delivery === "header") {
      form.auth = { kind: "header", header: binding.name };
      $("cf-header-name").value = binding.name;
    }
  }
  if (form.auth.kind === "none" && connector.oauth_state) form.auth = { kind: "oauth", header: "" };
  $("cf-auth").value = form.auth.kind;
}

/** Open the form: `kind` ("local", "remote", "socket") to add one, or `connector` (a
 * ConnectorDetail) to edit it; focus returns to `opener` when it closes. */
export function openConnectorForm({ kind = "local", connector = null, opener = document.activeElement } = {}) {
  const root = dialog();
  if (!root || root.open) return;
  reset();
  form.mode = connector ? "edit" : "add";
  offerAutoTransport(!connector);
  form.connector = connector;
  form.kind = connector ? KIND_OF_TRANSPORT[connector.transport] : kind;
  form.auth = { kind: "none", header: "" };
  form.envRows = [];
  form.closing = false;
  if (connector) fill(connector);
  slot(root, "title").textContent = connector
    ? t("form_edit", { name: connector.display_name || connector.name })
    : t(`form_add_${form.kind}`);
  showKind();
  renderPreview();
  form.initial = snapshot();
  openDialog(root, { opener });
  (connector ? $("cf-display") : $("cf-name")).focus();
}

function offerAutoTransport(offered) {
  const select = $("cf-transport");
  autoTransport ??= $("cf-transport-auto");
  if (!autoTransport) return;
  if (offered && autoTransport.parentElement !== select) select.prepend(autoTransport);
  if (!offered) autoTransport.remove();
  select.value = offered ? "auto" : "streamable_http";
}

// --- closing ---------------------------------------------------------------------------------

async function requestClose() {
  if (form.closing || form.saving) return;
  if (isDirty()) {
    form.closing = true;
    const answer = await openDialog($("discard-dialog"), { opener: document.activeElement });
    form.closing = false;
    if (answer !== "discard") return;
  }
  closeDialog(dialog(), "cancel");
}

// --- errors ----------------------------------------------------------------------------------

function clearErrors() {
  const root = dialog();
  for (const box of root.querySelectorAll(".field-error[id]")) {
    box.textContent = "";
    show(box, false);
  }
  for (const input of root.querySelectorAll("[aria-invalid]")) input.removeAttribute("aria-invalid");
  show($("connector-form-error"), false);
}

function clearFieldError(input) {
  if (!(input instanceof HTMLElement) || !input.id) return;
  const box = errorBoxOf(input);
  if (!box) return;
  box.textContent = "";
  show(box, false);
  input.removeAttribute("aria-invalid");
}

function errorBoxOf(input) {
  if (input.id === "cf-env-add") return $("cf-env-error");
  return $(`${input.id}-error`);
}

/** Show `message` under the field `input`; returns whether there was a place for it. */
function fieldError(input, message) {
  if (!input) return false;
  const box = errorBoxOf(input);
  if (!box) return false;
  box.textContent = message;
  show(box);
  if (input.id !== "cf-env-add") input.setAttribute("aria-invalid", "true");
  return true;
}

function elementForField(field) {
  const parts = String(field ?? "").split(".").reverse();
  for (const part of parts) {
    if (part === "bearer" || part === "value") {
      return $("cf-auth").value === "env" ? $("cf-variable") : $("cf-secret");
    }
    if (part === "variable") return form.kind === "local" ? $("cf-env-add") : $("cf-variable");
    if (FIELD_ELEMENTS[part]) return $(FIELD_ELEMENTS[part]);
  }
  return null;
}

function focusFirstError() {
  const invalid = dialog().querySelector('[aria-invalid="true"]') ?? ($("cf-env-error").hidden ? null : $("cf-env-add"));
  if (!invalid) return;
  const details = invalid.closest("details");
  if (details) details.open = true;
  invalid.focus();
}

function showApiError(error) {
  const text = error.code ? `${error.message} (${t("error_code", { code: error.code })})` : error.message;
  const field = error.details?.field ?? (error.details?.cause === "name_taken" ? "name" : null);
  if (!fieldError(elementForField(field), text)) {
    const box = $("connector-form-error");
    box.textContent = text;
    show(box);
  }
  focusFirstError();
}

// --- building the requests --------------------------------------------------------------------

class FormInvalid extends Error {}

function require_(input, message = t("field_required")) {
  if (input.value.trim() === "") {
    fieldError(input, message);
    return false;
  }
  return true;
}

function targetBody() {
  if (form.kind === "local") {
    const input = $("cf-command");
    let words;
    try {
      words = shlexSplit(input.value);
    } catch (caught) {
      fieldError(input, shlexMessage(caught));
      throw new FormInvalid();
    }
    if (words.length === 0) {
      fieldError(input, t("field_required"));
      throw new FormInvalid();
    }
    return { transport: "stdio", command: words[0], args: words.slice(1), cwd: $("cf-cwd").value.trim() };
  }
  if (form.kind === "remote") {
    if (!require_($("cf-url"))) throw new FormInvalid();
    return { transport: $("cf-transport").value, url: $("cf-url").value.trim() };
  }
  if (!require_($("cf-socket"))) throw new FormInvalid();
  return { transport: "socket", path: $("cf-socket").value.trim() };
}

function targetKey(target) {
  if (target.transport === "stdio") return JSON.stringify([target.transport, target.command, target.args, target.cwd ?? ""]);
  return JSON.stringify([target.transport, target.url ?? target.path]);
}

function runtimeOptions() {
  const options = {};
  const initial = form.connector?.runtime_options ?? {};
  const lifecycle = $("cf-lifecycle").value;
  if (form.mode === "add" ? lifecycle !== "lazy" : lifecycle !== initial.lifecycle) options.lifecycle = lifecycle;
  for (const [key, id] of [
    ["request_timeout", "cf-request-timeout"],
    ["idle_timeout", "cf-idle-timeout"],
  ]) {
    const input = $(id);
    const value = numberOrNull(input.value);
    if (value !== null && !(Number.isFinite(value) && value > 0)) {
      fieldError(input, t("field_positive"));
      throw new FormInvalid();
    }
    if (form.mode === "add" ? value !== null : value !== (initial[key] ?? null)) options[key] = value;
  }
  if (form.kind === "remote") {
    const allowPrivate = $("cf-allow-private").checked;
    if (form.mode === "add" ? allowPrivate : allowPrivate !== (initial.allow_private === true)) options.allow_private = allowPrivate;
  }
  return options;
}

/** The bindings to add or replace and the places to free, from the auth and env fields. */
function bindingChanges() {
  const bindings = [];
  const unset = [];
  if (form.kind === "remote") {
    const auth = $("cf-auth").value;
    const secret = $("cf-secret").value;
    const had = form.auth;
    const place = (kind, header) => (kind === "header" ? `header:${header}` : kind === "bearer" || kind === "env" ? "bearer" : null);
    const header = $("cf-header-name").value.trim();
    if (auth === "bearer") {
      if (secret) bindings.push({ delivery: "bearer", value: secret });
      else if (had.kind !== "bearer") {
        fieldError($("cf-secret"), t("field_required"));
        throw new FormInvalid();
      }
    } else if (auth === "header") {
      if (!require_($("cf-header-name"))) throw new FormInvalid();
      if (secret) bindings.push({ delivery: "header", name: header, value: secret });
      else if (!(had.kind === "header" && had.header === header)) {
        fieldError($("cf-secret"), t("field_required"));
        throw new FormInvalid();
      }
    } else if (auth === "env") {
      if (!require_($("cf-variable"))) throw new FormInvalid();
      const variable = $("cf-variable").value.trim();
      const unchanged = had.kind === "env" && form.connector?.bindings.some((b) => b.delivery === "bearer" && b.variable === variable);
      if (!unchanged) bindings.push({ delivery: "bearer", variable });
    }
    const before = place(had.kind, had.header);
    const now = place(auth, header);
    if (before && before !== now) unset.push(before);
  }
  if (form.kind === "local") {
    const rows = envRows();
    const names = new Set();
    for (const row of rows) {
      if (!row.name && !row.value) continue;
      if (!row.name) {
        fieldError($("cf-env-add"), t("env_needs_name"));
        slot(row.element, "name").focus();
        throw new FormInvalid();
      }
      names.add(row.name);
      const before = form.envRows.find((r) => r.name === row.name);
      if (row.source === "secret") {
        if (row.value) bindings.push({ delivery: "env", name: row.name, value: row.value });
        else if (!(before?.source === "secret" && row.configured)) {
          fieldError($("cf-env-add"), t("env_needs_value", { name: row.name }));
          throw new FormInvalid();
        }
      } else if (row.source === "variable") {
        if (!row.value.trim()) {
          fieldError($("cf-env-add"), t("env_needs_value", { name: row.name }));
          throw new FormInvalid();
        }
        const had = form.connector?.bindings.find((b) => b.delivery === "env" && b.name === row.name);
        if (!(had?.source === "environment" && had.variable === row.value.trim())) {
          bindings.push({ delivery: "env", name: row.name, variable: row.value.trim() });
        }
      } else {
        const had = form.connector?.bindings.find((b) => b.delivery === "env" && b.name === row.name);
        if (!(had?.source === "plain" && had.plain === row.value)) bindings.push({ delivery: "env", name: row.name, plain: row.value });
      }
    }
    for (const before of form.envRows) if (!names.has(before.name)) unset.push(`env:${before.name}`);
  }
  return { bindings, unset };
}

function filterChanges() {
  const include = splitPatterns($("cf-include").value);
  const exclude = splitPatterns($("cf-exclude").value);
  const settings = form.connector?.settings ?? { include_tools: [], exclude_tools: [] };
  const change = {};
  if (JSON.stringify(include) !== JSON.stringify(settings.include_tools)) change.include_tools = include;
  if (JSON.stringify(exclude) !== JSON.stringify(settings.exclude_tools)) change.exclude_tools = exclude;
  return change;
}

async function save() {
  clearErrors();
  const name = $("cf-name").value.trim();
  let target;
  let options;
  let changes;
  let filters;
  try {
    if (form.mode === "add" && !require_($("cf-name"))) throw new FormInvalid();
    target = targetBody();
    options = runtimeOptions();
    changes = bindingChanges();
    filters = filterChanges();
  } catch (caught) {
    if (!(caught instanceof FormInvalid)) throw caught;
    focusFirstError();
    return;
  }
  const displayName = $("cf-display").value.trim();
  const description = $("cf-description").value;
  // terms and privacy URLs are a remote service's; the other kinds keep what they have
  const urls = form.kind === "remote" ? { terms_url: $("cf-terms").value.trim(), privacy_url: $("cf-privacy").value.trim() } : {};
  let changed;
  if (form.mode === "add") {
    const body = { name, description, ...urls, target, enabled: $("cf-enabled").checked, bindings: changes.bindings };
    if (displayName) body.display_name = displayName;
    if (Object.keys(options).length) body.runtime_options = options;
    changed = await api.post("/api/mcp/connectors", body);
  } else {
    const current = form.connector;
    const body = { revision: current.revision };
    if (displayName && displayName !== current.display_name) body.display_name = displayName;
    if (description !== current.description) body.description = description;
    for (const [key, value] of Object.entries(urls)) if (value !== (current[key] ?? "")) body[key] = value;
    if (targetKey(target) !== targetKey(current.target)) body.target = target;
    if (Object.keys(options).length) body.runtime_options = options;
    if (changes.bindings.length) body.bindings = changes.bindings;
    if (changes.unset.length) body.unset_bindings = changes.unset;
    changed = await api.patch(connectorPath(current.connector_id), body);
  }
  if (Object.keys(filters).length) {
    // a second write: when it fails the connector stays as saved and the failure is shown (saving
    // the form again would add the connector twice)
    const revision = form.mode === "add" ? changed.settings.revision : form.connector.settings.revision;
    try {
      changed = await api.put(connectorPath(changed.connector_id, "/settings"), { revision, ...filters });
    } catch (error) {
      changed = { ...changed, filtersFailure: error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)) };
    }
  }
  if (form.mode === "add" && $("cf-resources").checked) changed = await exposeResources(changed);
  // OAuth settings: a second write with the revision the first answered; if it fails the
  // connector stays as saved and the failure is shown
  const oauth = form.kind === "remote" && $("cf-auth").value === "oauth";
  if (oauth && (form.mode === "add" || form.auth.kind !== "oauth" || oauthFieldsTouched())) {
    try {
      const configured = await saveOAuthConfig(changed.connector_id, changed.revision);
      changed = { ...changed, revision: configured.revision, runtime_reload: configured.runtime_reload };
    } catch (error) {
      changed = { ...changed, oauthFailure: error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)) };
    }
  }
  return changed;
}

/** The created connector's resource-read grant (PUT .../resources/grant allow), a second write:
 * when it fails the connector stays created and the answer carries `resourcesError`. */
async function exposeResources(created) {
  try {
    const grant = await api.put(connectorPath(created.connector_id, "/resources/grant"), { decision: "allow" });
    return { ...created, runtime_reload: grant.runtime_reload, resourcesExposed: true };
  } catch (error) {
    return { ...created, resourcesError: error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)) };
  }
}

function savedMessage(mode, changed) {
  const name = changed.display_name || changed.name;
  if (changed.resourcesError) {
    const { message, code } = changed.resourcesError;
    return t("connector_added_resources_failed", { name, message, code: code ?? "unknown" });
  }
  if (changed.resourcesExposed) return t("connector_added_resources", { name });
  return t(mode === "add" ? "connector_added" : "connector_updated", { name });
}

async function onSubmit(event) {
  event.preventDefault();
  if (form.saving) return;
  form.saving = true;
  const button = $("cf-save");
  button.setAttribute("aria-disabled", "true");
  button.setAttribute("aria-busy", "true");
  const mode = form.mode;
  let changed = null;
  try {
    changed = await save();
  } catch (error) {
    if (isRevisionConflict(error) && mode === "edit") {
      form.saving = false;
      closeDialog(dialog(), "conflict");
      document.dispatchEvent(
        new CustomEvent("patchbay:connector-saved", { detail: { connectorId: form.connector.connector_id, conflict: true } }),
      );
      return;
    }
    showApiError(error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)));
  } finally {
    form.saving = false;
    button.removeAttribute("aria-disabled");
    button.removeAttribute("aria-busy");
  }
  if (!changed) return;
  const detected = changed.transport_detection ?? null; // an Add with "Auto (detect)"
  closeDialog(dialog(), "saved");
  let message = savedMessage(mode, changed);
  if (detected) message = `${message}. ${detectedText(detected)}`;
  const label = changed.display_name || changed.name;
  const failed = changed.filtersFailure ?? changed.oauthFailure;
  const failedKey = changed.filtersFailure ? "filters_failed" : "oauth_config_failed";
  document.dispatchEvent(
    new CustomEvent("patchbay:connector-saved", {
      detail: {
        connectorId: changed.connector_id,
        runtimeReload: changed.runtime_reload,
        message,
        failure: failed
          ? new ApiError(failed.status, failed.code, t(failedKey, { name: label, message: failed.message }), failed.details)
          : null,
      },
    }),
  );
}

function detectedText(detection) {
  const transport = t(detection.transport === "sse" ? "transport_sse" : "transport_streamable_http");
  return t(detection.auth_required ? "transport_detected_auth" : "transport_detected", { transport });
}

// --- the Edit button ------------------------------------------------------------------------

async function onEdit(event) {
  const opener = event.currentTarget;
  const match = location.pathname.match(/^\/ui\/connectors\/([^/]+)$/);
  if (!match) return;
  try {
    const detail = await api.get(connectorPath(decodeURIComponent(match[1])));
    openConnectorForm({ connector: detail, opener });
  } catch (error) {
    showFailure(error instanceof ApiError ? error : new ApiError(0, "unknown", String(error)));
  }
}

// --- wiring ----------------------------------------------------------------------------------

function start() {
  const root = dialog();
  if (!root) return;
  $("connector-form").addEventListener("submit", onSubmit);
  $("cf-cancel").addEventListener("click", () => requestClose());
  $("cf-command").addEventListener("input", renderPreview);
  // a field's error goes as soon as the field is edited: it described the value that was there
  $("connector-form").addEventListener("input", (event) => {
    clearFieldError(event.target);
    // a URL refused as a private address is a matter of this checkbox too
    if (event.target.id === "cf-allow-private") clearFieldError($("cf-url"));
  });
  $("cf-auth").addEventListener("change", showAuth);
  $("cf-env-add").addEventListener("click", () => slot(addEnvRow(), "name").focus());
  // Escape asks first when something was typed: the dialog's own Escape would just close it
  root.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    event.preventDefault();
    event.stopPropagation();
    requestClose();
  });
  root.addEventListener("cancel", (event) => {
    event.preventDefault();
    requestClose();
  });
  window.addEventListener("beforeunload", (event) => {
    if (!isDirty()) return;
    event.preventDefault();
    event.returnValue = "";
  });
  $("edit-connector")?.addEventListener("click", onEdit);
}

start();
