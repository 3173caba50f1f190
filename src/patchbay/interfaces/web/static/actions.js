// The Actions tab: Disable (or Enable), Disconnect credential and Remove (seed 003 §4.3), three
// distinct actions. Disable, Disconnect and Remove are each confirmed in their own dialog
// (_detail_dialogs.html) that says what happens and what is kept; Cancel changes nothing. Each
// write is the API's own route with the revision the page read; its runtime_reload outcome is
// shown, and the list and the detail follow. A built-in connector has no Remove.

import { api, connectorPath, isRevisionConflict } from "./api.js";
import { registerTab } from "./detail.js";
import { openDialog } from "./dialog.js";
import { clone, setText, show, slot } from "./dom.js";
import { t } from "./i18n.js";
import { showConflict, showFailure, showSaved } from "./outcome.js";
import { bindingPlace, bindingSource } from "./security.js";

let running = false; // one action at a time: each changes what the others would act on

async function confirm(id, title, opener, fill = () => {}) {
  const dialog = document.getElementById(id);
  setText(dialog, "title", title);
  fill(dialog);
  return (await openDialog(dialog, { opener })) === "confirm";
}

async function run(button, context, action) {
  if (running) return;
  running = true;
  // aria-disabled, not disabled: disabling the focused button would drop the keyboard focus
  button.setAttribute("aria-disabled", "true");
  button.setAttribute("aria-busy", "true");
  try {
    await action();
  } catch (error) {
    if (isRevisionConflict(error)) {
      showConflict();
      await context.reload();
    } else {
      showFailure(error);
    }
  } finally {
    running = false;
    button.removeAttribute("aria-disabled");
    button.removeAttribute("aria-busy");
  }
}

async function toggle(button, connector, context) {
  const name = connector.display_name || connector.name;
  const enabled = !connector.settings.enabled;
  if (!enabled && !(await confirm("confirm-disable", t("confirm_disable_title", { name }), button))) return;
  await run(button, context, async () => {
    const changed = await api.put(connectorPath(connector.connector_id, "/settings"), {
      revision: connector.settings.revision,
      enabled,
    });
    context.replace(changed);
    showSaved(changed.runtime_reload, t(enabled ? "enabled_now" : "disabled_now", { name }));
  });
}

async function disconnect(button, connector, context) {
  const name = connector.display_name || connector.name;
  const fill = (dialog) => {
    slot(dialog, "bindings").replaceChildren(
      ...(connector.bindings ?? []).map((binding) => {
        const item = clone("tpl-binding");
        setText(item, "place", bindingPlace(binding));
        setText(item, "source", bindingSource(binding));
        return item;
      }),
    );
  };
  if (!(await confirm("confirm-disconnect", t("confirm_disconnect_title", { name }), button, fill))) return;
  await run(button, context, async () => {
    const result = await api.post(connectorPath(connector.connector_id, "/disconnect"), {
      revision: connector.revision,
    });
    const count = result.unbound.length + (result.oauth.deleted ? 1 : 0);
    context.replace(result.connector);
    showSaved(result.runtime_reload, count ? t("disconnected_now", { name }) : t("disconnected_nothing", { name }));
  });
}

async function remove(button, connector, context) {
  const name = connector.display_name || connector.name;
  if (!(await confirm("confirm-remove", t("confirm_remove_title", { name }), button))) return;
  await run(button, context, async () => {
    const result = await api.delete(connectorPath(connector.connector_id));
    context.removed(connector.connector_id);
    showSaved(result.runtime_reload, t("removed_now", { name }));
  });
}

function render(panel, connector, context) {
  const on = connector.settings.enabled;
  setText(panel, "toggle-title", on ? t("action_disable") : t("action_enable"));
  setText(panel, "toggle-text", on ? t("action_disable_text") : t("action_enable_text"));
  const toggleButton = panel.querySelector('[data-action="toggle"]');
  toggleButton.textContent = on ? t("action_disable_button") : t("action_enable_button");
  toggleButton.onclick = () => toggle(toggleButton, connector, context);
  const disconnectButton = panel.querySelector('[data-action="disconnect"]');
  disconnectButton.onclick = () => disconnect(disconnectButton, connector, context);
  const builtin = connector.source === "builtin";
  show(slot(panel, "remove-box"), !builtin);
  show(slot(panel, "builtin-note"), builtin);
  const removeButton = panel.querySelector('[data-action="remove"]');
  removeButton.onclick = builtin ? null : () => remove(removeButton, connector, context);
}

registerTab("actions", render);
