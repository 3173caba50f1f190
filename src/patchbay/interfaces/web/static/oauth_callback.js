// The OAuth callback page: tell the settings page that opened it how the login ended (this
// origin only, nothing but the outcome), then let the person close the window.
const main = document.getElementById("main");
const outcome = main && main.dataset.outcome === "success" ? "success" : "failure";
if (window.opener && !window.opener.closed) {
  window.opener.postMessage({ type: "patchbay-oauth", outcome }, window.location.origin);
}
