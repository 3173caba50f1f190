// What the connector list shows: the filters, the search, the groups and one-line target
// summaries. Pure functions of the API's connector summaries (GET /api/mcp/connectors).

const LOCAL = new Set(["stdio", "socket"]);
const REMOTE = new Set(["streamable_http", "sse"]);

/** The filter chips (data-filter in connectors.html), each a predicate. */
export const FILTERS = {
  all: () => true,
  enabled: (c) => c.settings.enabled,
  ready: (c) => c.status === "ready" || c.status === "connected",
  "needs-auth": (c) => c.status === "needs-auth",
  local: (c) => LOCAL.has(c.transport),
  remote: (c) => REMOTE.has(c.transport),
  imported: (c) => c.source === "imported",
};

/** The groups, in the order shown: enabled ones, then the ones that are off, then imported ones
 * not enabled yet (imports arrive off, for a person to review), then the built-in connectors,
 * on or off, in their own group. */
export const GROUPS = ["enabled", "available", "imported", "builtin"];

export function groupOf(connector) {
  if (connector.source === "builtin") return "builtin";
  if (connector.settings.enabled) return "enabled";
  return connector.source === "imported" ? "imported" : "available";
}

function quoted(arg) {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}

/** The target in one line: the command line (shell-quoted for reading; it is never run by a
 * shell), the URL, or the socket path. */
export function targetSummary(target) {
  switch (target.transport) {
    case "stdio":
      return [target.command, ...target.args].map(quoted).join(" ");
    case "socket":
      return target.path;
    default:
      return target.url;
  }
}

/** Whether the connector matches the search `query` (case-insensitive, in name, display
 * name, description and target). */
export function matchesQuery(connector, query) {
  const needle = query.trim().toLowerCase();
  if (!needle) return true;
  return [connector.name, connector.display_name, connector.description, targetSummary(connector.target)]
    .filter(Boolean)
    .some((text) => text.toLowerCase().includes(needle));
}

/** The connectors shown for `filter` and `query`, by group: [[group, [connector...]], ...],
 * groups without a connector left out, each group in the API's order (by name). */
export function visibleGroups(connectors, filter, query) {
  const predicate = FILTERS[filter] ?? FILTERS.all;
  const shown = connectors.filter((c) => predicate(c) && matchesQuery(c, query));
  return GROUPS.map((group) => [group, shown.filter((c) => groupOf(c) === group)]).filter(([, list]) => list.length);
}
