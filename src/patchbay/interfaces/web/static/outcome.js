// What a mutation did, shown in #outcome and announced: "Saved", "Saved, reload pending" or
// "Saved, reload failed" with the sessions affected (the API's runtime_reload), a revision
// conflict, or a failure with its stable code.

import { announce } from "./announce.js";
import { reloadOutcome } from "./api.js";
import { setText, show, slot } from "./dom.js";
import { t } from "./i18n.js";

function render(kind, title, lines) {
  const box = document.getElementById("outcome");
  if (!box) return;
  box.dataset.kind = kind;
  setText(box, "title", title);
  const list = slot(box, "sessions");
  list.replaceChildren(
    ...lines.map((line) => {
      const item = document.createElement("li");
      item.textContent = line;
      return item;
    }),
  );
  show(box);
  announce([title, ...lines].join("\n"));
}

/** Show how the open sessions took a saved change (`runtimeReload`: the API's runtime_reload).
 * `prefix` (optional) is said first, e.g. "time is now off". Returns the outcome kind. */
export function showSaved(runtimeReload, prefix = "") {
  const { kind, sessions } = reloadOutcome(runtimeReload);
  const title = { saved: t("saved"), pending: t("saved_pending"), failed: t("saved_failed") }[kind];
  const lines = [];
  if (sessions.length) {
    lines.push(t("sessions_affected", { count: sessions.length }));
    for (const session of sessions) {
      lines.push(
        session.status === "failed"
          ? t("session_failed", { workspace: session.workspace, message: session.error?.message ?? "" })
          : t("session_pending", { workspace: session.workspace }),
      );
    }
  }
  render(kind, prefix ? t("what_then_outcome", { what: prefix, outcome: title }) : title, lines);
  return kind;
}

/** Show that the change lost a revision race: nothing was written; the caller reloads. */
export function showConflict() {
  render("conflict", t("conflict"), []);
}

/** Show a failed call (an ApiError): its message and stable code. */
export function showFailure(error) {
  render("error", error.message, error.code ? [t("error_code", { code: error.code })] : []);
}

/** Hide the outcome box. */
export function clearOutcome() {
  const box = document.getElementById("outcome");
  if (box) show(box, false);
}
