// The page's one aria-live region (#announcer in base.html): status changes and the outcome of
// every action are read out by screen readers.

let pending = null;

/** Announce `text` politely. The same text twice in a row is announced twice. */
export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  // a new text node in a later task: screen readers announce a change, even to the same words
  clearTimeout(pending);
  pending = setTimeout(() => {
    region.textContent = text;
  }, 50);
}
