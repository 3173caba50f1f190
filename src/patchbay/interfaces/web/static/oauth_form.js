// The OAuth part of the Add/Edit form (templates/_oauth_fields.html): Client ID (empty: dynamic
// client registration), Scope, Issuer (pinned) and Client secret (to the credential store, never
// shown again). The form saves the connector first, then PUTs these settings with the revision
// that save answered; a failure of that second write is reported, the connector stays.

import { api, connectorPath } from "./api.js";

const FIELDS = [
  ["client_id", "cf-oauth-client-id"],
  ["scope", "cf-oauth-scope"],
  ["issuer", "cf-oauth-issuer"],
  ["client_secret", "cf-oauth-secret"],
];

function input(id) {
  return document.getElementById(id);
}

/** Empty every OAuth field (the form opens). */
export function resetOAuthFields() {
  for (const [, id] of FIELDS) {
    const element = input(id);
    if (element) element.value = "";
  }
}

/** Whether anything was typed into the OAuth fields. */
export function oauthFieldsTouched() {
  return FIELDS.some(([, id]) => (input(id)?.value ?? "").trim() !== "");
}

/** The body of PUT .../oauth/config from the fields (empty ones left out), without a revision. */
export function oauthConfigBody() {
  const body = { grant: "authorization_code" };
  for (const [key, id] of FIELDS) {
    const value = key === "client_secret" ? (input(id)?.value ?? "") : (input(id)?.value ?? "").trim();
    if (value !== "") body[key] = value;
  }
  return body;
}

/** PUT the OAuth settings of connector `connectorId` under connector `revision`; resolves to
 * the answer (OAuthConfigured: revision, status, runtime_reload), rejects with ApiError. */
export async function saveOAuthConfig(connectorId, revision) {
  const answer = await api.put(connectorPath(connectorId, "/oauth/config"), { ...oauthConfigBody(), revision });
  input("cf-oauth-secret").value = ""; // the secret is stored: keep no copy in the page
  return answer;
}
