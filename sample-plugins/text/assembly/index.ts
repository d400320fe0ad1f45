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

  // str reads a string after its opening quote; null when malformed. It
  // writes the characters into one buffer as long as the source (escapes
  // only shorten): a part per escape kept every one alive until the end,
  // and 40,000 escaped characters ran out of the plugin's 4 MiB.
  str(): string | null {
    let end = this.pos;
    while (end < this.s.length) {
      const c = this.s.charCodeAt(end);
      if (c == 0x22) break;
      end += c == 0x5c ? 2 : 1;
    }
    if (end >= this.s.length) return null;
    const buf = new Uint16Array(end - this.pos);
    let n = 0;
    while (this.pos < end) {
      const c = this.s.charCodeAt(this.pos++);
      if (c < 0x20) return null;
      if (c != 0x5c) {
        buf[n++] = <u16>c;
        continue;
      }
      const e = this.s.charCodeAt(this.pos++);
      let o: i32 = -1;
      if (e == 0x22 || e == 0x5c || e == 0x2f) o = e;
      else if (e == 0x62) o = 0x08;
      else if (e == 0x66) o = 0x0c;
      else if (e == 0x6e) o = 0x0a;
      else if (e == 0x72) o = 0x0d;
      else if (e == 0x74) o = 0x09;
      else if (e == 0x75) o = this.hex4(); // a lone surrogate pairs with the next escape
      if (o < 0 || this.pos > end) return null;
      buf[n++] = <u16>o;
    }
    this.pos++; // the closing quote
    return String.UTF16.decodeUnsafe(buf.dataStart, <usize>n << 1);
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

// quote returns s as a JSON string, written into one buffer of its exact
// length (a part per escaped character kept them all alive until the end).
function quote(s: string): string {
  let len = 2;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) len += 1;
    else if (c == 0x22 || c == 0x5c || c == 0x0a || c == 0x0d || c == 0x09) len += 2;
    else len += 6;
  }
  const buf = new Uint16Array(len);
  let n = 0;
  buf[n++] = 0x22;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 0x22 && c != 0x5c) {
      buf[n++] = <u16>c;
      continue;
    }
    buf[n++] = 0x5c;
    if (c == 0x22 || c == 0x5c) buf[n++] = <u16>c;
    else if (c == 0x0a) buf[n++] = 0x6e;
    else if (c == 0x0d) buf[n++] = 0x72;
    else if (c == 0x09) buf[n++] = 0x74;
    else {
      const hex = "0123456789abcdef";
      buf[n++] = 0x75;
      buf[n++] = 0x30;
      buf[n++] = 0x30;
      buf[n++] = <u16>hex.charCodeAt(c >> 4);
      buf[n++] = <u16>hex.charCodeAt(c & 0xf);
    }
  }
  buf[n++] = 0x22;
  return String.UTF16.decodeUnsafe(buf.dataStart, <usize>n << 1);
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
// the rest. Each word's cased text is copied into one buffer and dropped
// (a part per word kept 50,000 words alive until the end); a case change
// makes a character at most three UTF-16 units long.
function titleCase(s: string): string {
  const buf = new Uint16Array(s.length * 3);
  let n = 0;
  let start = 0;
  let inWord = false;
  for (let i = 0; i <= s.length; i++) {
    const space = i == s.length || isSpace(s.charCodeAt(i));
    if (space == !inWord) continue;
    let piece: string;
    if (inWord) {
      const w = s.substring(start, i);
      const first = w.codePointAt(0) > 0xffff ? 2 : 1;
      piece = w.substring(0, first).toUpperCase() + w.substring(first).toLowerCase();
    } else {
      piece = s.substring(start, i);
    }
    for (let j = 0; j < piece.length; j++) buf[n++] = <u16>piece.charCodeAt(j);
    start = i;
    inWord = !inWord;
  }
  for (let j = start; j < s.length; j++) buf[n++] = <u16>s.charCodeAt(j); // trailing spaces
  return String.UTF16.decodeUnsafe(buf.dataStart, <usize>n << 1);
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
