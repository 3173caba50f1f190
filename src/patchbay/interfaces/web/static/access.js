// The Default agent access tab: the connector's global defaults for the agents of every workspace
// (seed 003 §4.3, §5.2): enabled, include/exclude tool patterns and the approval mode (ask,
// custom, allow_all). Saved with PUT .../settings under the settings revision the page read;
// switching to Allow all is confirmed first; a lost race reloads and overwrites nothing.

import { renderResources } from "./access_resources.js";
import { api, connectorPath, isRevisionConflict } from "./api.js";
import { registerTab } from "./detail.js";
import { openDialog } from "./dialog.js";
import { setText, slot } from "./dom.js";
import { t } from "./i18n.js";
import { showConflict, showFailure, showSaved } from "./outcome.js";

/** Patterns typed one per line as the API takes them: trimmed, no blank lines. */
export function patterns(text) {
  return text
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line !== "");
}

function sameList(a, b) {
  return a.length === b.length && a.every((item, index) => item === b[index]);
}

function render(panel, connector, context) {
  const form = slot(panel, "form");
  const settings = connector.settings;
  form.elements.enabled.checked = settings.enabled;
  for (const radio of form.querySelectorAll('input[name="approval_mode"]')) {
    radio.checked = radio.value === settings.approval_mode;
  }
  form.elements.include_tools.value = settings.include_tools.join("\n");
  form.elements.exclude_tools.value = settings.exclude_tools.join("\n");
  form.onsubmit = (event) => {
    event.preventDefault();
    save(form, connector, context);
  };
  renderResources(panel, connector);
}

async function save(form, connector, context) {
  const settings = connector.settings;
  const button = form.querySelector('[data-action="save-access"]');
  if (button.getAttribute("aria-disabled") === "true") return;
  const mode = form.querySelector('input[name="approval_mode"]:checked')?.value ?? settings.approval_mode;
  const body = { revision: settings.revision };
  if (form.elements.enabled.checked !== settings.enabled) body.enabled = form.elements.enabled.checked;
  if (mode !== settings.approval_mode) body.approval_mode = mode;
  const include = patterns(form.elements.include_tools.value);
  const exclude = patterns(form.elements.exclude_tools.value);
  if (!sameList(include, settings.include_tools)) body.include_tools = include;
  if (!sameList(exclude, settings.exclude_tools)) body.exclude_tools = exclude;
  const name = connector.display_name || connector.name;
  if (body.approval_mode === "allow_all") {
    const dialog = document.getElementById("confirm-allow-all");
    setText(dialog, "title", t("confirm_allow_all_title", { name }));
    if ((await openDialog(dialog, { opener: button })) !== "confirm") return;
  }
  button.setAttribute("aria-disabled", "true");
  try {
    const changed = await api.put(connectorPath(connector.connector_id, "/settings"), body);
    context.replace(changed);
    showSaved(changed.runtime_reload, t("access_saved", { name }));
  } catch (error) {
    if (isRevisionConflict(error)) {
      showConflict();
      await context.reload();
    } else {
      showFailure(error);
    }
  } finally {
    button.removeAttribute("aria-disabled");
  }
}

registerTab("access", render);
