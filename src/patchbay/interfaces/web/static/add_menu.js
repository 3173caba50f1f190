// The Add menu (templates/_add_menu.html): a menu button opening a menu of the kinds of
// connector. Enter, Space or ArrowDown open it on the first item (ArrowUp: the last), the arrows,
// Home and End move, Escape closes it and returns the focus to the button, Tab closes it. An item
// opens the Add form of its kind; "Import existing config" dispatches "patchbay:open-import"
// (detail: {opener}) for the import dialog.

import { openConnectorForm } from "./connector_form.js";

function items(menu) {
  return [...menu.querySelectorAll('[role="menuitem"]')];
}

function wire(root) {
  const button = root.querySelector("[aria-haspopup]");
  const menu = root.querySelector('[role="menu"]');
  const open = (focusLast = false) => {
    menu.hidden = false;
    button.setAttribute("aria-expanded", "true");
    const list = items(menu);
    list[focusLast ? list.length - 1 : 0].focus();
  };
  const close = (restore = true) => {
    if (menu.hidden) return;
    menu.hidden = true;
    button.setAttribute("aria-expanded", "false");
    if (restore) button.focus();
  };
  button.addEventListener("click", () => (menu.hidden ? open() : close()));
  button.addEventListener("keydown", (event) => {
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      open(event.key === "ArrowUp");
    } else if (event.key === "Escape" && !menu.hidden) {
      event.preventDefault();
      close();
    }
  });
  menu.addEventListener("keydown", (event) => {
    const list = items(menu);
    const index = list.indexOf(document.activeElement);
    const move = { ArrowDown: index + 1, ArrowUp: index - 1, Home: 0, End: list.length - 1 }[event.key];
    if (move !== undefined) {
      event.preventDefault();
      list[(move + list.length) % list.length].focus();
    } else if (event.key === "Escape") {
      event.preventDefault();
      close();
    } else if (event.key === "Tab") {
      close(false);
    }
  });
  menu.addEventListener("click", (event) => {
    const item = event.target.closest("[data-add-kind]");
    if (!item) return;
    close();
    const kind = item.dataset.addKind;
    if (kind === "import") {
      document.dispatchEvent(new CustomEvent("patchbay:open-import", { detail: { opener: button } }));
    } else {
      openConnectorForm({ kind, opener: button });
    }
  });
  // a click anywhere else closes it, leaving the focus where the click put it
  document.addEventListener("pointerdown", (event) => {
    if (!root.contains(event.target)) close(false);
  });
  root.addEventListener("focusout", (event) => {
    if (event.relatedTarget && !root.contains(event.relatedTarget)) close(false);
  });
}

for (const root of document.querySelectorAll("[data-add-menu]")) wire(root);
