// Status badges: the API's `status` (control/status.py: invalid > disabled > needs-auth > error >
// connecting/checking > connected/ready > unknown) shown by cloning the server's translated
// <template id="tpl-badge-<status>">. The server renders one template per status it knows, so the
// templates present are the list of statuses; nothing here repeats it.

import { clone } from "./dom.js";

/** A badge element for `status` (a word with no template shows as "unknown"). */
export function badge(status) {
  const known = document.getElementById(`tpl-badge-${status}`) instanceof HTMLTemplateElement;
  return clone(`tpl-badge-${known ? status : "unknown"}`);
}
