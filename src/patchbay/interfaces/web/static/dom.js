// Building the page from the server's <template> elements. Data goes in as text or attributes,
// never as HTML.

/** A copy of the first element of <template id="...">. */
export function clone(id) {
  const template = document.getElementById(id);
  if (!(template instanceof HTMLTemplateElement)) {
    throw new Error(`no <template id="${id}">`);
  }
  return template.content.firstElementChild.cloneNode(true);
}

/** The element of `root` marked data-slot="name" (root itself is not searched). */
export function slot(root, name) {
  return root.querySelector(`[data-slot="${name}"]`);
}

/** Set the text of slot `name` of `root`; returns the slot. */
export function setText(root, name, text) {
  const element = slot(root, name);
  element.textContent = text ?? "";
  return element;
}

/** Show or hide an element (the `hidden` attribute: no inline style, as the CSP wants). */
export function show(element, visible = true) {
  element.hidden = !visible;
}
