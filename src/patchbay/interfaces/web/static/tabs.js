// An ARIA tablist: click or Enter/Space activates a tab; Left/Right (and Home/End) move between
// tabs and activate them; only the active tab is in the Tab order, and only its panel is shown.

/** Wire the tablist `list`; `onActivate(name)` is called with the tab's data-tab. Returns
 * `activate(name)` to switch tabs from code. */
export function initTabs(list, onActivate = () => {}) {
  const tabs = () => [...list.querySelectorAll('[role="tab"]')];

  function activate(name, { focus = false } = {}) {
    for (const tab of tabs()) {
      const selected = tab.dataset.tab === name;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
      const panel = document.getElementById(tab.getAttribute("aria-controls"));
      if (panel) panel.hidden = !selected;
      if (selected && focus) tab.focus();
    }
    onActivate(name);
  }

  list.addEventListener("click", (event) => {
    const tab = event.target.closest('[role="tab"]');
    if (tab && list.contains(tab)) activate(tab.dataset.tab);
  });
  list.addEventListener("keydown", (event) => {
    const all = tabs();
    const index = all.indexOf(document.activeElement);
    if (index < 0) return;
    const next = {
      ArrowRight: (index + 1) % all.length,
      ArrowLeft: (index - 1 + all.length) % all.length,
      Home: 0,
      End: all.length - 1,
    }[event.key];
    if (next === undefined) return;
    event.preventDefault();
    activate(all[next].dataset.tab, { focus: true });
  });
  const current = tabs().find((tab) => tab.getAttribute("aria-selected") === "true") ?? tabs()[0];
  if (current) activate(current.dataset.tab);
  return activate;
}
