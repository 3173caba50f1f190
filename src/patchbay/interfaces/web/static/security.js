// The Security tab: where the connector's credentials come from (a binding's place, kind and
// name, never a value; configured or missing), its OAuth grant's state, where its traffic goes and
// how it is audited (seed 003 §14.2), its terms and privacy links when the API has them, and the
// last probe.

import { registerTab } from "./detail.js";
import { clone, setText, show, slot } from "./dom.js";
import { t } from "./i18n.js";
import { renderConnect } from "./oauth_connect.js";
import { probeText } from "./overview.js";

/** `url` when it is an absolute http(s) URL (a link the page may offer), else null. */
export function safeLink(url) {
  if (typeof url !== "string" || url === "") return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** Where a binding puts its value: "Environment variable X", "Header X", "Bearer token". */
export function bindingPlace(binding) {
  if (binding.delivery === "env") return t("binding_env", { name: binding.name });
  if (binding.delivery === "header") return t("binding_header", { name: binding.name });
  return t("binding_bearer");
}

/** Where a binding's value comes from, never the value of a secret. */
export function bindingSource(binding) {
  if (binding.source === "environment") return t("binding_from_variable", { variable: binding.variable ?? "" });
  if (binding.source === "plain") return t("binding_plain", { value: binding.plain ?? "" });
  const ref = binding.ref ?? "";
  return binding.owned ? t("binding_stored", { ref }) : t("binding_shared", { ref });
}

function bindingState(binding) {
  return binding.problem ? t(`binding_problem_${binding.problem}`) : t("credential_configured");
}

function egressText(connector) {
  if (connector.transport === "streamable_http" || connector.transport === "sse") {
    const private_ = connector.runtime_options?.allow_private ? t("egress_private_allowed") : t("egress_private_refused");
    return `${t("egress_remote")} ${private_}`;
  }
  return connector.transport === "socket" ? t("egress_socket") : t("egress_stdio");
}


function renderLink(panel, name, url) {
  const href = safeLink(url);
  show(slot(panel, `${name}-box`), href !== null);
  const link = slot(panel, name);
  if (href === null) {
    link.removeAttribute("href");
    link.textContent = "";
    return;
  }
  link.href = href;
  link.textContent = href;
}

function render(panel, connector, context) {
  const bindings = connector.bindings ?? [];
  const missing = bindings.some((b) => b.problem);
  const credential =
    connector.auth_state === "needs-auth" || missing
      ? t("credential_missing")
      : bindings.length || connector.oauth_state
        ? t("credential_configured")
        : t("credential_none");
  const state = setText(panel, "credential-state", credential);
  state.dataset.state = connector.auth_state;
  setText(panel, "oauth", connector.oauth_state ? t(`oauth_${connector.oauth_state}`) : t("oauth_none"));
  slot(panel, "bindings").replaceChildren(
    ...bindings.map((binding) => {
      const item = clone("tpl-binding");
      item.dataset.problem = binding.problem ?? "";
      setText(item, "place", bindingPlace(binding));
      setText(item, "source", bindingSource(binding));
      setText(item, "state", bindingState(binding));
      return item;
    }),
  );
  show(slot(panel, "bindings"), bindings.length > 0);
  show(slot(panel, "no-bindings"), bindings.length === 0);
  setText(panel, "egress", egressText(connector));
  renderLink(panel, "terms", connector.terms_url);
  renderLink(panel, "privacy", connector.privacy_url);
  setText(panel, "probe", probeText(connector.last_probe));
  renderConnect(panel, connector, context);
}

registerTab("security", render);
