// Splitting a command line into words by POSIX shell rules, as Python's shlex.split does (posix
// mode, no comments): whitespace separates words; '...' keeps everything literally; "..." keeps
// everything but lets a backslash escape " and \ (before any other character the backslash
// stays); outside quotes a backslash makes the next character literal; '' is an empty word. No
// expansion of any kind: the words are what the server gets, and it never hands them to a shell.
//
//   import { shlexSplit, ShlexError } from "./shlex.js";
//   shlexSplit(`uvx mcp-server-git --repository "my repo"`)  // ["uvx", "mcp-server-git", "--repository", "my repo"]

const WHITESPACE = " \t\r\n";

/** Why a command line cannot be split: `code` is "unterminated_quote" (a ' or " is not closed)
 * or "trailing_backslash" (a backslash at the very end escapes nothing); `position` is the index
 * of the opening quote or of the backslash. */
export class ShlexError extends Error {
  constructor(code, position) {
    super(code);
    this.name = "ShlexError";
    this.code = code;
    this.position = position;
  }
}

/** The words of `line` (a string). Throws ShlexError. */
export function shlexSplit(line) {
  const words = [];
  let word = "";
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const ch = line[i];
    if (WHITESPACE.includes(ch)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
      i += 1;
    } else if (ch === "\\") {
      if (i + 1 >= line.length) throw new ShlexError("trailing_backslash", i);
      word += line[i + 1];
      inWord = true;
      i += 2;
    } else if (ch === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new ShlexError("unterminated_quote", i);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (ch === '"') {
      const start = i;
      inWord = true;
      i += 1;
      for (;;) {
        if (i >= line.length) throw new ShlexError("unterminated_quote", start);
        const c = line[i];
        if (c === '"') {
          i += 1;
          break;
        }
        if (c === "\\") {
          if (i + 1 >= line.length) throw new ShlexError("unterminated_quote", start);
          const next = line[i + 1];
          word += next === '"' || next === "\\" ? next : `\\${next}`;
          i += 2;
        } else {
          word += c;
          i += 1;
        }
      }
    } else {
      word += ch;
      inWord = true;
      i += 1;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** `words` joined back into one line that shlexSplit splits into the same words. */
export function shlexJoin(words) {
  return words.map((w) => (w !== "" && /^[A-Za-z0-9_@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\"'\"'")}'`)).join(" ");
}
