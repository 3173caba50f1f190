// Strings and formats in the page's language. The server renders every string the scripts show
// into <script type="application/json" id="i18n"> from its catalogue (web/i18n.py JS_MESSAGES);
// dates and numbers follow <html lang>.

let messages = null;

function catalogue() {
  if (messages === null) {
    const block = document.getElementById("i18n");
    messages = block ? JSON.parse(block.textContent) : {};
  }
  return messages;
}

/** The document's language tag ("en", "zh-Hans"). */
export function lang() {
  return document.documentElement.lang || "en";
}

/** The message `key` with `{name}` placeholders filled from `vars`; the key itself if unknown. */
export function t(key, vars = {}) {
  const template = catalogue()[key] ?? key;
  return template.replace(/\{(\w+)\}/g, (match, name) => (name in vars ? String(vars[name]) : match));
}

/** Unix milliseconds as a date and time of the page's locale. */
export function formatDate(ms) {
  return new Intl.DateTimeFormat(lang(), { dateStyle: "medium", timeStyle: "short" }).format(new Date(ms));
}

/** A number in the page's locale (grouping separators). */
export function formatNumber(value) {
  return new Intl.NumberFormat(lang()).format(value);
}
