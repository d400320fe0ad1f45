// The line-oriented JSON script protocol shared by toolhost's MCP client CLIs
// (test/mcpclient on SDK v1, test/mcpclient2 on SDK v2): argument parsing,
// reading steps, and running them against an SDK-specific adapter. It uses
// only Node built-ins, so either client can import it. See README.md.

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

export const EXIT_OK = 0;
export const EXIT_CONNECT = 1;
export const EXIT_USAGE = 2;
export const EXIT_TRANSPORT = 3;
export const EXIT_UNCLEAN_SERVER_EXIT = 4;

export const COMMON_OPTIONS_USAGE = `  --script FILE          read steps from FILE instead of stdin
  --token TOKEN          bearer token for http (default: $MCPCLIENT_TOKEN)
  --timeout-ms N         per-request timeout (default 60000)
  --require-clean-exit   stdio only: exit 4 unless the server exits 0 on its own after stdin closes`;

export const STEPS_USAGE = `steps (JSON array, or one JSON object per line):
  {"op":"list"}
  {"op":"call","tool":NAME,"arguments":{...},"validate":true,"timeout_ms":N,"progress":false}
  {"op":"wait_list_changed","timeout_ms":5000}
  {"op":"info"}
  {"op":"sleep","ms":N}`;

export class UsageError extends Error {}

export function die(code, msg) {
  process.stderr.write(`mcpclient: ${msg}\n`);
  process.exitCode = code;
}

export function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

// parseArgs reads `stdio [flags] -- cmd args...` or `http URL [flags]`.
// extraFlags maps a client's own flags to handlers (opts, next) where next()
// returns the flag's value.
export function parseArgs(argv, extraFlags = {}) {
  const opts = { timeoutMs: 60000, requireCleanExit: false, token: process.env.MCPCLIENT_TOKEN };
  const mode = argv[0];
  if (mode !== 'stdio' && mode !== 'http') throw new UsageError(`unknown mode ${JSON.stringify(mode)}`);
  opts.mode = mode;
  let i = 1;
  const positional = [];
  const need = (flag) => () => {
    if (i + 1 >= argv.length) throw new UsageError(`${flag} needs a value`);
    return argv[++i];
  };
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      opts.command = argv.slice(i + 1);
      break;
    } else if (a === '--script') opts.script = need(a)();
    else if (a === '--token') opts.token = need(a)();
    else if (a === '--timeout-ms') {
      opts.timeoutMs = Number(need(a)());
      if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) throw new UsageError('bad --timeout-ms');
    } else if (a === '--require-clean-exit') opts.requireCleanExit = true;
    else if (Object.hasOwn(extraFlags, a)) extraFlags[a](opts, need(a));
    else if (a === '-h' || a === '--help') throw new UsageError('');
    else if (a.startsWith('--')) throw new UsageError(`unknown flag ${a}`);
    else positional.push(a);
  }
  if (mode === 'stdio') {
    if (!opts.command || opts.command.length === 0) throw new UsageError('stdio mode needs -- <command> [args...]');
    if (positional.length) throw new UsageError(`unexpected argument ${positional[0]}`);
  } else {
    if (opts.command) throw new UsageError('http mode takes no -- command');
    if (positional.length !== 1) throw new UsageError('http mode needs exactly one <url>');
    try {
      opts.url = new URL(positional[0]);
    } catch {
      throw new UsageError(`bad url ${positional[0]}`);
    }
  }
  return opts;
}

// setUp parses the command line and, for --script, reads the steps (so a
// bad script fails before connecting). configure(opts) may check the
// client's own options and returns what the client needs from them. On a
// usage error it prints usage, sets the exit code and returns undefined.
export async function setUp(usage, extraFlags, configure = () => undefined) {
  try {
    const opts = parseArgs(process.argv.slice(2), extraFlags);
    const config = configure(opts);
    const stepSource = opts.script !== undefined ? await openSteps(opts) : undefined;
    return { opts, config, stepSource };
  } catch (e) {
    // --help is a UsageError without a message: only the usage is printed.
    if (e.message) die(EXIT_USAGE, e.message);
    else process.exitCode = EXIT_USAGE;
    if (e instanceof UsageError) process.stderr.write(usage + '\n');
    return undefined;
  }
}

// connectOrDie connects and returns true, or reports the failure (exit 1),
// closes the client and returns false.
export async function connectOrDie(client, transport, opts, describe) {
  try {
    await client.connect(transport, { timeout: opts.timeoutMs });
    return true;
  } catch (e) {
    die(EXIT_CONNECT, `connect failed: ${describe(e)}`);
    try {
      await client.close();
    } catch {
      /* ignore */
    }
    return false;
  }
}

// newTransport builds the transport opts ask for from an SDK's two
// transport classes. A stdio server gets the whole environment (the SDKs
// alone pass only HOME, PATH and a few more, and TOOLHOST_HOME must reach
// it) and shares our stderr; HTTP requests carry the bearer token.
export function newTransport(opts, StdioTransport, HTTPTransport, httpOptions = {}) {
  if (opts.mode === 'stdio') {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    return new StdioTransport({ command: opts.command[0], args: opts.command.slice(1), env, stderr: 'inherit' });
  }
  const headers = {};
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  return new HTTPTransport(opts.url, { requestInit: { headers }, ...httpOptions });
}

function validateStep(step, where) {
  if (step === null || typeof step !== 'object' || Array.isArray(step)) {
    throw new UsageError(`${where}: step must be a JSON object`);
  }
  switch (step.op) {
    case 'list':
    case 'info':
    case 'wait_list_changed':
    case 'sleep':
      return;
    case 'call':
      if (typeof step.tool !== 'string') throw new UsageError(`${where}: call needs "tool" (string)`);
      if (step.arguments !== undefined && (step.arguments === null || typeof step.arguments !== 'object' || Array.isArray(step.arguments))) {
        throw new UsageError(`${where}: call "arguments" must be an object`);
      }
      return;
    default:
      throw new UsageError(`${where}: unknown op ${JSON.stringify(step.op)}`);
  }
}

// openSteps returns {steps, close}: steps is an (async) iterator. Array input
// is parsed fully up front (so script errors surface before connecting);
// line input on stdin is streamed, one step per line as it arrives.
export async function openSteps(opts) {
  if (opts.script !== undefined) return stepsFromText(readFileSync(opts.script, 'utf8'));

  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const it = rl[Symbol.asyncIterator]();
  // Peek at the first non-blank line to choose the format.
  let first;
  for (;;) {
    const r = await it.next();
    if (r.done) return { steps: [][Symbol.iterator](), close: () => rl.close() };
    if (r.value.trim() !== '') {
      first = r.value;
      break;
    }
  }
  if (first.trimStart().startsWith('[')) {
    let buf = first + '\n';
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      buf += r.value + '\n';
    }
    return stepsFromText(buf);
  }
  let n = 0;
  async function* gen() {
    let line = first;
    for (;;) {
      if (line.trim() !== '') {
        n++;
        let step;
        try {
          step = JSON.parse(line);
        } catch (e) {
          throw new UsageError(`stdin line step ${n}: ${e.message}`);
        }
        validateStep(step, `step ${n}`);
        yield step;
      }
      const r = await it.next();
      if (r.done) return;
      line = r.value;
    }
  }
  return { steps: gen(), close: () => rl.close() };
}

function stepsFromText(text) {
  const trimmed = text.trim();
  let steps;
  if (trimmed === '') steps = [];
  else if (trimmed.startsWith('[')) {
    try {
      steps = JSON.parse(trimmed);
    } catch (e) {
      throw new UsageError(`script: ${e.message}`);
    }
  } else {
    steps = trimmed.split('\n').filter((l) => l.trim() !== '').map((l, i) => {
      try {
        return JSON.parse(l);
      } catch (e) {
        throw new UsageError(`script line ${i + 1}: ${e.message}`);
      }
    });
  }
  steps.forEach((s, i) => validateStep(s, `step ${i + 1}`));
  return { steps: steps[Symbol.iterator](), close: () => {} };
}

// ListChangedCounter remembers tools/list_changed notifications that arrive
// before a wait step; a wait step consumes all of them.
export class ListChangedCounter {
  #pending = 0;
  #wake = null;

  notify() {
    this.#pending++;
    if (this.#wake) this.#wake();
  }

  async wait(timeoutMs) {
    if (this.#pending === 0) {
      await new Promise((resolve) => {
        const t = setTimeout(resolve, timeoutMs);
        this.#wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.#wake = null;
    }
    const count = this.#pending;
    this.#pending = 0;
    return count;
  }
}

// runSteps runs every step against sdk, an adapter over one SDK's client:
//   listPage(cursor, timeoutMs) → {tools, nextCursor}
//   callTool(params, {validate, timeoutMs, onprogress}) → CallToolResult;
//     onprogress, when set, is the request's progress callback
//   errorData(e) → {protocolError: …} or {sdkError: …} for a failed request
//     that is data (a JSON-RPC error, a timeout), undefined for a transport
//     failure (which ends the script)
//   info() → the fields of the info step's output
//   describe(e) → a one-line message for a transport failure
//   listChanged: a ListChangedCounter the SDK's notification handler feeds.
// It returns the exit code.
export async function runSteps(opts, stepSource, sdk) {
  try {
    if (!stepSource) stepSource = await openSteps(opts);
    for await (const step of stepSource.steps) {
      await runStep(opts, sdk, step);
    }
    return EXIT_OK;
  } catch (e) {
    if (e instanceof UsageError) {
      die(EXIT_USAGE, e.message);
      return EXIT_USAGE;
    }
    die(EXIT_TRANSPORT, sdk.describe(e));
    return EXIT_TRANSPORT;
  } finally {
    stepSource?.close();
  }
}

async function runStep(opts, sdk, step) {
  switch (step.op) {
    case 'list': {
      const tools = [];
      try {
        let cursor;
        do {
          const res = await sdk.listPage(cursor, opts.timeoutMs);
          for (const t of res.tools) {
            const o = { name: t.name, description: t.description, inputSchema: t.inputSchema };
            if (t.title !== undefined) o.title = t.title;
            if (t.outputSchema !== undefined) o.outputSchema = t.outputSchema;
            if (t.annotations !== undefined) o.annotations = t.annotations;
            if (t.icons !== undefined) o.icons = t.icons;
            tools.push(o);
          }
          cursor = res.nextCursor;
        } while (cursor);
      } catch (e) {
        const data = sdk.errorData(e);
        if (data) return out({ op: 'list', ...data });
        throw e;
      }
      return out({ op: 'list', tools });
    }
    case 'call': {
      const params = { name: step.tool, arguments: step.arguments ?? {} };
      const progress = step.progress === true ? [] : undefined;
      const onprogress = progress && ((p) => progress.push(p));
      let res;
      try {
        res = await sdk.callTool(params, { validate: step.validate !== false, timeoutMs: step.timeout_ms ?? opts.timeoutMs, onprogress });
      } catch (e) {
        const data = sdk.errorData(e);
        if (data) return out({ op: 'call', tool: step.tool, ...data, ...(progress && { progress }) });
        throw e;
      }
      const o = { op: 'call', tool: step.tool, isError: res.isError === true, content: res.content ?? [] };
      if (res.structuredContent !== undefined) o.structuredContent = res.structuredContent;
      if (progress) o.progress = progress;
      return out(o);
    }
    case 'wait_list_changed': {
      const count = await sdk.listChanged.wait(step.timeout_ms ?? 5000);
      return out({ op: 'wait_list_changed', received: count > 0, count });
    }
    case 'info':
      return out({ op: 'info', ...sdk.info() });
    case 'sleep':
      await new Promise((r) => setTimeout(r, step.ms ?? 0));
      return out({ op: 'sleep' });
  }
}

// checkServerExit waits briefly for a stdio server (a child process) that
// the SDK's close has asked to stop, and reports whether it exited 0 by
// itself. It returns the exit code to use given the code so far.
export async function checkServerExit(child, opts, exitCode) {
  if (!child) return exitCode;
  // The SDKs' close ends stdin, waits 2s, then SIGTERM (2s), then SIGKILL.
  if (child.exitCode === null && child.signalCode === null) {
    await new Promise((r) => {
      child.once('exit', r);
      setTimeout(r, 1000).unref();
    });
  }
  if (child.exitCode === 0) return exitCode;
  const how = child.signalCode ? `was killed with ${child.signalCode}` : child.exitCode === null ? 'is still running' : `exited with status ${child.exitCode}`;
  process.stderr.write(`mcpclient: server did not exit cleanly after stdin closed: it ${how}\n`);
  if (opts.requireCleanExit && exitCode === EXIT_OK) return EXIT_UNCLEAN_SERVER_EXIT;
  return exitCode;
}
