// The pending-approvals region (templates/_approvals.html): calls of browser-approved sessions
// that wait for a person's answer, live from GET /api/approvals/stream (Server-Sent Events:
// snapshot, added, removed). An answer is POSTed with the arguments digest and the policy the
// page was shown, so a stale answer is refused (409 approval_stale) instead of applied. A link to
// /ui#approval-<id> (what a gateway host is given) brings that approval into view.

import { api } from "./api.js";
import { announce } from "./announce.js";
import { clone, setText, show, slot } from "./dom.js";
import { formatDate, t } from "./i18n.js";

const RISKS = { read: "approval_risk_read", destructive: "approval_risk_destructive", network: "approval_risk_network" };
const ANSWERED = {
  allow_once: "approval_allowed_once",
  allow_session: "approval_allowed_session",
  deny: "approval_denied",
};

let region = null;
let list = null;
const items = new Map(); // approval id -> <li>

function render(approval) {
  const item = clone("approval-item");
  item.dataset.approvalId = approval.id;
  const title = setText(item, "title", t("approval_title", { name: approval.name }));
  title.id = `approval-${approval.id}-title`;
  slot(item, "actions").setAttribute("aria-labelledby", title.id);
  setText(item, "risk", t(RISKS[approval.risk] ?? approval.risk));
  setText(item, "workspace", approval.workspace);
  setText(item, "expires", formatDate(approval.expires * 1000));
  setText(item, "arguments", JSON.stringify(approval.arguments, null, 2));
  for (const button of item.querySelectorAll("button[data-answer]")) {
    button.addEventListener("click", () => answer(approval, button.dataset.answer, item));
  }
  return item;
}

function add(approval, { speak }) {
  if (items.has(approval.id)) return;
  const item = render(approval);
  item.id = `approval-${approval.id}`;
  items.set(approval.id, item);
  list.append(item);
  show(region, true);
  if (speak) announce(t("approval_waiting", { name: approval.name }));
  if (location.hash === `#${item.id}`) reveal(item);
}

/** The approval a link named (`/ui#approval-<id>`, what a gateway host was told): marked,
 * scrolled to, its title focused so it is read first; never a button, so no key press answers it. */
function reveal(item) {
  for (const other of items.values()) other.classList.remove("requested");
  item.classList.add("requested");
  const title = item.querySelector("h3");
  title.tabIndex = -1;
  title.focus();
  item.scrollIntoView({ block: "center" });
}

/** Remove an item; focus moves to the next item's first button, or the heading, if it was inside. */
function remove(id) {
  const item = items.get(id);
  if (!item) return;
  const hadFocus = item.contains(document.activeElement);
  const next = item.nextElementSibling ?? item.previousElementSibling;
  items.delete(id);
  item.remove();
  const empty = items.size === 0;
  if (hadFocus) {
    const target = next?.querySelector("button[data-answer]");
    if (target) {
      target.focus();
    } else if (empty) {
      document.getElementById("main")?.focus();
    }
  }
  if (empty) show(region, false);
}

async function answer(approval, choice, item) {
  // aria-disabled, not disabled: a disabled button drops the focus to <body>
  if (item.dataset.busy === "true") return;
  item.dataset.busy = "true";
  const buttons = item.querySelectorAll("button[data-answer]");
  for (const button of buttons) button.setAttribute("aria-disabled", "true");
  try {
    await api.post(`/api/approvals/${encodeURIComponent(approval.id)}`, {
      answer: choice,
      digest: approval.arguments_digest,
      policy: approval.policy,
    });
    announce(t(ANSWERED[choice], { name: approval.name }));
    remove(approval.id);
  } catch (error) {
    if (error.code === "not_found") {
      announce(t("approval_gone", { name: approval.name }));
      remove(approval.id);
      return;
    }
    announce(t("approval_failed", { name: approval.name, message: error.message }));
    for (const button of buttons) button.removeAttribute("aria-disabled");
    item.dataset.busy = "false";
  }
}

function snapshot(approvals) {
  const seen = new Set(approvals.map((approval) => approval.id));
  for (const id of [...items.keys()]) {
    if (!seen.has(id)) remove(id);
  }
  for (const approval of approvals) add(approval, { speak: false });
  if (approvals.length > 0) announce(t("approvals_waiting_count", { count: approvals.length }));
}

/** Start following the pending approvals (once per page). */
export function startApprovals() {
  region = document.getElementById("approvals");
  list = document.getElementById("approvals-list");
  if (!region || !list || typeof EventSource === "undefined") return;
  const source = new EventSource("/api/approvals/stream");
  source.addEventListener("snapshot", (event) => snapshot(JSON.parse(event.data).approvals));
  source.addEventListener("added", (event) => add(JSON.parse(event.data), { speak: true }));
  source.addEventListener("removed", (event) => remove(JSON.parse(event.data).id));
  window.addEventListener("hashchange", () => {
    const item = items.get(location.hash.replace(/^#approval-/, ""));
    if (item) reveal(item);
  });
}
