// Status badges: the API's `status` (control/status.py: invalid > disabled > needs-auth > error >
// connecting/checking > connected/ready > unknown) shown by cloning the server's translated
// <template id="tpl-badge-<status>">.

import { clone } from "./dom.js";

export const STATUSES = [
  "invalid",
  "disabled",
  "needs-auth",
  "error",
  "connecting",
  "checking",
  "connected",
  "ready",
  "unknown",
];

/** A badge element for `status` (an unknown word shows as "unknown"). */
export function badge(status) {
  return clone(`tpl-badge-${STATUSES.includes(status) ? status : "unknown"}`);
}
