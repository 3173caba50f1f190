// Modal dialogs: open a <dialog> with focus inside and trapped there, Escape closes it, and focus
// goes back to whatever opened it.
//
//   import { openDialog, closeDialog } from "./dialog.js";
//   const value = await openDialog(document.getElementById("confirm-remove"));  // its returnValue

const FOCUSABLE = [
  "a[href]",
  "button:not([disabled])",
  "input:not([disabled]):not([type=hidden])",
  "select:not([disabled])",
  "textarea:not([disabled])",
  "[tabindex]:not([tabindex='-1'])",
].join(",");

function focusables(dialog) {
  return [...dialog.querySelectorAll(FOCUSABLE)].filter((el) => !el.closest("[hidden]") && el.getClientRects().length);
}

/** Open `dialog` (an HTMLDialogElement) as a modal. Focus goes to its [autofocus] element, else
 * its first focusable one; Tab and Shift+Tab cycle inside it; Escape (or closeDialog) closes it
 * and focus returns to `opener` (default: the element focused before). Resolves with the
 * dialog's returnValue when it closes. */
export function openDialog(dialog, { opener = document.activeElement } = {}) {
  return new Promise((resolve) => {
    const trap = (event) => {
      if (event.key !== "Tab") return;
      const items = focusables(dialog);
      if (items.length === 0) {
        event.preventDefault();
        return;
      }
      const first = items[0];
      const last = items[items.length - 1];
      if (event.shiftKey && (document.activeElement === first || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && (document.activeElement === last || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        first.focus();
      }
    };
    const closed = () => {
      dialog.removeEventListener("keydown", trap);
      if (opener && typeof opener.focus === "function" && opener.isConnected) {
        opener.focus();
      }
      resolve(dialog.returnValue);
    };
    dialog.addEventListener("keydown", trap);
    dialog.addEventListener("close", closed, { once: true });
    dialog.returnValue = "";
    dialog.showModal(); // the rest of the page is inert; Escape fires "cancel", then "close"
    const target = dialog.querySelector("[autofocus]") ?? focusables(dialog)[0];
    target?.focus();
  });
}

/** Close an open dialog with `value` as its returnValue. */
export function closeDialog(dialog, value = "") {
  if (dialog.open) dialog.close(value);
}
