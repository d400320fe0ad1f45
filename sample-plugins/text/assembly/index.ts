// toolhost sample plugin in AssemblyScript: text tools.
//
// Each tool is an export that reads the tool arguments (a JSON object whose
// values are strings; the host has checked them against the schema in
// plugin.json) as its Extism input and writes a JSON object as its output.
// Errors are reported with error_set and a non-zero return value.
import { Host, Memory } from "@extism/as-pdk";
import { error_set } from "@extism/as-pdk/lib/env";

// The runtime's abort (a failed assertion, an out-of-bounds access)
// becomes a tool error instead of an import of env.abort.
function myAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  fail("internal error: " + (message == null ? "abort" : message) + " at " + (fileName == null ? "?" : fileName) + ":" + line.toString());
  unreachable();
}

function fail(message: string): i32 {
  error_set(Memory.allocateBytes(Uint8Array.wrap(String.UTF8.encode(message))).offset);
  return 1;
}

function succeed(json: string): i32 {
  // Host.outputString would use the UTF-16 length: encode first.
  Host.output(Uint8Array.wrap(String.UTF8.encode(json)));
  return 0;
}

// Args are the tool arguments: a JSON object of string values.
class Args {
  keys: string[] = [];
  values: string[] = [];
  error: string = "";

  get(key: string): string | null {
    for (let i = 0; i < this.keys.length; i++) {
      if (this.keys[i] == key) return this.values[i];
    }
    return null;
  }
}

// Parser reads a JSON object whose values are strings (RFC 8259 strings
// with every escape, surrogate pairs included).
class Parser {
  pos: i32 = 0;
  constructor(public s: string) {}

  space(): void {
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c != 0x20 && c != 0x09 && c != 0x0a && c != 0x0d) return;
      this.pos++;
    }
  }

  // eat consumes c after spaces, reporting whether it was there.
  eat(c: i32): bool {
    this.space();
    if (this.pos < this.s.length && this.s.charCodeAt(this.pos) == c) {
      this.pos++;
      return true;
    }
    return false;
  }

  hex4(): i32 {
    if (this.pos + 4 > this.s.length) return -1;
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = this.s.charCodeAt(this.pos + i);
      let d = -1;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      if (d < 0) return -1;
      v = v * 16 + d;
    }
    this.pos += 4;
    return v;
  }

  // str reads a string after its opening quote; null when malformed.
  str(): string | null {
    const parts: string[] = [];
    let start = this.pos;
    while (this.pos < this.s.length) {
      const c = this.s.charCodeAt(this.pos);
      if (c == 0x22) {
        parts.push(this.s.substring(start, this.pos));
        this.pos++;
        return parts.join("");
      }
      if (c < 0x20) return null;
      if (c != 0x5c) {
        this.pos++;
        continue;
      }
      parts.push(this.s.substring(start, this.pos));
      this.pos++;
      if (this.pos >= this.s.length) return null;
      const e = this.s.charCodeAt(this.pos++);
      if (e == 0x22) parts.push('"');
      else if (e == 0x5c) parts.push("\\");
      else if (e == 0x2f) parts.push("/");
      else if (e == 0x62) parts.push("\b");
      else if (e == 0x66) parts.push("\f");
      else if (e == 0x6e) parts.push("\n");
      else if (e == 0x72) parts.push("\r");
      else if (e == 0x74) parts.push("\t");
      else if (e == 0x75) {
        const u = this.hex4();
        if (u < 0) return null;
        parts.push(String.fromCharCode(u)); // a lone surrogate pairs with the next escape
      } else return null;
      start = this.pos;
    }
    return null;
  }
}

function parseArgs(input: string): Args {
  const a = new Args();
  const p = new Parser(input);
  if (!p.eat(0x7b)) {
    a.error = "the arguments must be a JSON object";
    return a;
  }
  if (!p.eat(0x7d)) {
    while (true) {
      if (!p.eat(0x22)) break;
      const k = p.str();
      if (k == null || !p.eat(0x3a) || !p.eat(0x22)) break;
      const v = p.str();
      if (v == null) break;
      a.keys.push(k);
      a.values.push(v);
      if (p.eat(0x2c)) continue;
      if (p.eat(0x7d)) {
        p.space();
        if (p.pos == input.length) return a;
      }
      break;
    }
    a.error = "the arguments must be a JSON object of strings";
    return a;
  }
  return a;
}

// quote returns s as a JSON string.
function quote(s: string): string {
  const parts: string[] = ['"'];
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) continue;
    parts.push(s.substring(start, i));
    if (c == 0x22) parts.push('\\"');
    else if (c == 0x5c) parts.push("\\\\");
    else if (c == 0x0a) parts.push("\\n");
    else if (c == 0x0d) parts.push("\\r");
    else if (c == 0x09) parts.push("\\t");
    else parts.push("\\u00" + (c < 0x10 ? "0" : "") + c.toString(16));
    start = i + 1;
  }
  parts.push(s.substring(start));
  parts.push('"');
  return parts.join("");
}

// textArgs parses the arguments and checks the required "text"; on
// failure it reports the error and returns null.
function textArgs(): Args | null {
  const a = parseArgs(Host.inputString());
  if (a.error != "") {
    fail(a.error);
    return null;
  }
  if (a.get("text") == null) {
    fail('missing required argument "text"');
    return null;
  }
  return a;
}

// isSpace is Unicode White_Space (Go's unicode.IsSpace).
function isSpace(c: i32): bool {
  return c == 0x20 || (c >= 0x09 && c <= 0x0d) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

function isLowSurrogate(c: i32): bool {
  return c >= 0xdc00 && c <= 0xdfff;
}

export function word_count(): i32 {
  const a = textArgs();
  if (a == null) return 1;
  const s = a.get("text")!;
  let words = 0, chars = 0, lines = s.length > 0 ? 1 : 0;
  let inWord = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (!isLowSurrogate(c)) chars++;
    if (c == 0x0a) lines++;
    if (isSpace(c)) {
      inWord = false;
    } else if (!inWord) {
      inWord = true;
      words++;
    }
  }
  const bytes = String.UTF8.byteLength(s);
  return succeed('{"words":' + words.toString() + ',"characters":' + chars.toString() +
    ',"lines":' + lines.toString() + ',"bytes":' + bytes.toString() + "}");
}

// titleCase upper-cases the first letter of every word and lower-cases
// the rest.
function titleCase(s: string): string {
  const parts: string[] = [];
  let start = 0;
  let inWord = false;
  for (let i = 0; i <= s.length; i++) {
    const space = i == s.length || isSpace(s.charCodeAt(i));
    if (space && inWord) {
      const w = s.substring(start, i);
      const first = w.codePointAt(0) > 0xffff ? 2 : 1;
      parts.push(w.substring(0, first).toUpperCase() + w.substring(first).toLowerCase());
      start = i;
      inWord = false;
    } else if (!space && !inWord) {
      parts.push(s.substring(start, i));
      start = i;
      inWord = true;
    }
  }
  parts.push(s.substring(start));
  return parts.join("");
}

export function change_case(): i32 {
  const a = textArgs();
  if (a == null) return 1;
  const t = a.get("text")!;
  const to = a.get("to");
  if (to == null) return fail('missing required argument "to": upper, lower or title');
  let out: string;
  if (to == "upper") out = t.toUpperCase();
  else if (to == "lower") out = t.toLowerCase();
  else if (to == "title") out = titleCase(t);
  else return fail('unknown case ' + quote(to) + ": use upper, lower or title");
  return succeed('{"text":' + quote(out) + "}");
}

// fold maps a Latin-1 or Latin Extended-A letter to its ASCII base
// letter(s), or "" when it has none.
function fold(c: i32): string {
  if (c < 0xc0 || c > 0x17f) return "";
  const table = "AAAAAAACEEEEIIIIDNOOOOO*OUUUUYTsaaaaaaaceeeeiiiidnooooo/ouuuuyty" +
    "AaAaAaCcCcCcCcDdDdEeEeEeEeEeGgGgGgGgHhHhIiIiIiIiIiJjJjKkkLlLlLlLlLlNnNnNnnNnOoOoOoOoRrRrRrSsSsSsSsTtTtTtUuUuUuUuUuUuWwYyYZzZzZzs";
  const f = table.charAt(c - 0xc0);
  if (f == "*" || f == "/") return "";
  if (c == 0xc6) return "ae";
  if (c == 0xe6) return "ae";
  if (c == 0xdf) return "ss";
  if (c == 0x152 || c == 0x153) return "oe";
  return f.toLowerCase();
}

export function slugify(): i32 {
  const a = textArgs();
  if (a == null) return 1;
  const s = a.get("text")!;
  const parts: string[] = [];
  let dash = false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    let piece = "";
    if ((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x7a)) piece = String.fromCharCode(c);
    else if (c >= 0x41 && c <= 0x5a) piece = String.fromCharCode(c + 0x20);
    else piece = fold(c);
    if (piece == "") {
      dash = parts.length > 0;
      continue;
    }
    if (dash) parts.push("-");
    dash = false;
    parts.push(piece);
  }
  return succeed('{"slug":' + quote(parts.join("")) + "}");
}
