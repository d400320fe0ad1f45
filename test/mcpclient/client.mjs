#!/usr/bin/env node
// MCP client CLI used by toolhost's end-to-end tests. See README.md.
//
//   node client.mjs stdio [--script FILE] [options] -- <command> [args...]
//   node client.mjs http <url> [--token TOKEN] [--script FILE] [options]
//
// Steps come from --script FILE or stdin: either a JSON array of steps, or
// (when the input does not start with '[') one JSON step object per line,
// executed as each line arrives. Every step prints exactly one JSON line on
// stdout. Diagnostics go to stderr.
//
// Exit codes: 0 all steps ran (tool errors and JSON-RPC errors are data);
// 1 connection failure; 2 usage or script error; 3 transport failure after
// connecting (e.g. the server died mid-script); 4 --require-clean-exit was
// given and the stdio server did not exit by itself with status 0 after its
// stdin was closed.

import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

const EXIT_OK = 0;
const EXIT_CONNECT = 1;
const EXIT_USAGE = 2;
const EXIT_TRANSPORT = 3;
const EXIT_UNCLEAN_SERVER_EXIT = 4;

const USAGE = `usage:
  node client.mjs stdio [options] -- <command> [args...]
  node client.mjs http <url> [--token TOKEN] [options]
options:
  --script FILE          read steps from FILE instead of stdin
  --token TOKEN          bearer token for http (default: $MCPCLIENT_TOKEN)
  --timeout-ms N         per-request timeout (default 60000)
  --require-clean-exit   stdio only: exit 4 unless the server exits 0 on its own after stdin closes
steps (JSON array, or one JSON object per line):
  {"op":"list"}
  {"op":"call","tool":NAME,"arguments":{...},"validate":true,"timeout_ms":N}
  {"op":"wait_list_changed","timeout_ms":5000}
  {"op":"info"}
  {"op":"sleep","ms":N}`;

class UsageError extends Error {}

function die(code, msg) {
  process.stderr.write(`mcpclient: ${msg}\n`);
  process.exitCode = code;
}

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function parseArgs(argv) {
  const opts = { timeoutMs: 60000, requireCleanExit: false, token: process.env.MCPCLIENT_TOKEN };
  const mode = argv[0];
  if (mode !== 'stdio' && mode !== 'http') throw new UsageError(`unknown mode ${JSON.stringify(mode)}`);
  opts.mode = mode;
  let i = 1;
  const positional = [];
  const need = (flag) => {
    if (i + 1 >= argv.length) throw new UsageError(`${flag} needs a value`);
    return argv[++i];
  };
  for (; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      opts.command = argv.slice(i + 1);
      break;
    } else if (a === '--script') opts.script = need(a);
    else if (a === '--token') opts.token = need(a);
    else if (a === '--timeout-ms') {
      opts.timeoutMs = Number(need(a));
      if (!Number.isFinite(opts.timeoutMs) || opts.timeoutMs <= 0) throw new UsageError('bad --timeout-ms');
    } else if (a === '--require-clean-exit') opts.requireCleanExit = true;
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

function validateStep(step, where) {
  if (step === null || typeof step !== 'object' || Array.isArray(step)) {
    throw new UsageError(`${where}: step must be a JSON object`);
  }
  switch (step.op) {
    case 'list':
    case 'info':
      return;
    case 'call':
      if (typeof step.tool !== 'string') throw new UsageError(`${where}: call needs "tool" (string)`);
      if (step.arguments !== undefined && (step.arguments === null || typeof step.arguments !== 'object' || Array.isArray(step.arguments))) {
        throw new UsageError(`${where}: call "arguments" must be an object`);
      }
      return;
    case 'wait_list_changed':
    case 'sleep':
      return;
    default:
      throw new UsageError(`${where}: unknown op ${JSON.stringify(step.op)}`);
  }
}

// Returns an async iterator of steps. Array input is parsed fully up front
// (so script errors surface before connecting); line input is streamed.
async function openSteps(opts) {
  const text = opts.script !== undefined ? readFileSync(opts.script, 'utf8') : null;
  if (text !== null) return stepsFromText(text);

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

function protocolErrorOf(err) {
  // McpError prefixes its message with "MCP error <code>: "; report the original.
  const message = String(err.message ?? '').replace(/^MCP error -?\d+: /, '');
  const pe = { code: err.code, message };
  if (err.data !== undefined) pe.data = err.data;
  return pe;
}

function describe(err) {
  if (err instanceof StreamableHTTPError && err.code !== undefined) return `HTTP ${err.code}: ${err.message}`;
  const cause = err?.cause?.message ? ` (${err.cause.message})` : '';
  return `${err?.message ?? err}${cause}`;
}

async function main() {
  let opts;
  let stepSource;
  try {
    opts = parseArgs(process.argv.slice(2));
    if (opts.script !== undefined) stepSource = await openSteps(opts);
  } catch (e) {
    if (e instanceof UsageError) {
      if (e.message) die(EXIT_USAGE, e.message);
      else process.exitCode = EXIT_USAGE;
      process.stderr.write(USAGE + '\n');
      return;
    }
    die(EXIT_USAGE, e.message);
    return;
  }

  let transport;
  let child = null;
  if (opts.mode === 'stdio') {
    const env = {};
    for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
    transport = new StdioClientTransport({
      command: opts.command[0],
      args: opts.command.slice(1),
      env,
      stderr: 'inherit',
    });
  } else {
    const headers = {};
    if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
    transport = new StreamableHTTPClientTransport(opts.url, { requestInit: { headers } });
  }
  let negotiatedVersion;
  const origSetVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiatedVersion = v;
    origSetVersion?.(v);
  };

  const client = new Client({ name: 'toolhost-e2e-client', version: '0.0.0' });

  // list_changed bookkeeping: notifications that arrive before a wait step
  // are remembered, and a wait step consumes all of them.
  let pendingListChanged = 0;
  let wakeWaiter = null;
  // Registered before connect so nothing sent right after initialization is missed.
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    pendingListChanged++;
    if (wakeWaiter) wakeWaiter();
  });

  client.onerror = (err) => {
    process.stderr.write(`mcpclient: transport error: ${describe(err)}\n`);
  };

  try {
    await client.connect(transport, { timeout: opts.timeoutMs });
    if (opts.mode === 'stdio') child = transport._process ?? null; // for the exit check below
  } catch (e) {
    die(EXIT_CONNECT, `connect failed: ${describe(e)}`);
    try {
      await client.close();
    } catch {
      /* ignore */
    }
    return;
  }

  let exitCode = EXIT_OK;
  try {
    if (!stepSource) stepSource = await openSteps(opts);
    for await (const step of stepSource.steps) {
      await runStep(step);
    }
  } catch (e) {
    if (e instanceof UsageError) {
      die(EXIT_USAGE, e.message);
      exitCode = EXIT_USAGE;
    } else {
      die(EXIT_TRANSPORT, describe(e));
      exitCode = EXIT_TRANSPORT;
    }
  } finally {
    stepSource?.close();
  }

  // Clean shutdown: end the HTTP session, or close the server's stdin.
  if (opts.mode === 'http') {
    try {
      await transport.terminateSession();
    } catch (e) {
      process.stderr.write(`mcpclient: terminating session failed: ${e?.message ?? e}\n`);
    }
  }
  try {
    await client.close();
  } catch (e) {
    process.stderr.write(`mcpclient: close failed: ${e?.message ?? e}\n`);
  }
  if (child) {
    // StdioClientTransport.close ends stdin, waits 2s, then SIGTERM (2s), then SIGKILL.
    if (child.exitCode === null && child.signalCode === null) {
      await new Promise((r) => {
        child.once('exit', r);
        setTimeout(r, 1000).unref();
      });
    }
    const clean = child.exitCode === 0;
    if (!clean) {
      const how = child.signalCode ? `was killed with ${child.signalCode}` : child.exitCode === null ? 'is still running' : `exited with status ${child.exitCode}`;
      process.stderr.write(`mcpclient: server did not exit cleanly after stdin closed: it ${how}\n`);
      if (opts.requireCleanExit && exitCode === EXIT_OK) exitCode = EXIT_UNCLEAN_SERVER_EXIT;
    }
  }
  process.exitCode = exitCode;

  async function runStep(step) {
    switch (step.op) {
      case 'list': {
        const tools = [];
        try {
          let cursor;
          do {
            const res = await client.listTools(cursor ? { cursor } : {}, { timeout: opts.timeoutMs });
            for (const t of res.tools) {
              const o = { name: t.name, description: t.description, inputSchema: t.inputSchema };
              if (t.title !== undefined) o.title = t.title;
              if (t.outputSchema !== undefined) o.outputSchema = t.outputSchema;
              if (t.annotations !== undefined) o.annotations = t.annotations;
              tools.push(o);
            }
            cursor = res.nextCursor;
          } while (cursor);
        } catch (e) {
          if (e instanceof McpError) return out({ op: 'list', protocolError: protocolErrorOf(e) });
          throw e;
        }
        return out({ op: 'list', tools });
      }
      case 'call': {
        const params = { name: step.tool, arguments: step.arguments ?? {} };
        const ropts = { timeout: step.timeout_ms ?? opts.timeoutMs };
        let res;
        try {
          res =
            step.validate === false
              ? await client.request({ method: 'tools/call', params }, CallToolResultSchema, ropts)
              : await client.callTool(params, CallToolResultSchema, ropts);
        } catch (e) {
          if (e instanceof McpError) return out({ op: 'call', tool: step.tool, protocolError: protocolErrorOf(e) });
          throw e;
        }
        const o = { op: 'call', tool: step.tool, isError: res.isError === true, content: res.content ?? [] };
        if (res.structuredContent !== undefined) o.structuredContent = res.structuredContent;
        return out(o);
      }
      case 'wait_list_changed': {
        const timeout = step.timeout_ms ?? 5000;
        if (pendingListChanged === 0) {
          await new Promise((resolve) => {
            const t = setTimeout(resolve, timeout);
            wakeWaiter = () => {
              clearTimeout(t);
              resolve();
            };
          });
          wakeWaiter = null;
        }
        const count = pendingListChanged;
        pendingListChanged = 0;
        return out({ op: 'wait_list_changed', received: count > 0, count });
      }
      case 'info':
        return out({
          op: 'info',
          protocolVersion: negotiatedVersion,
          serverInfo: client.getServerVersion(),
          capabilities: client.getServerCapabilities(),
          instructions: client.getInstructions(),
        });
      case 'sleep':
        await new Promise((r) => setTimeout(r, step.ms ?? 0));
        return out({ op: 'sleep' });
    }
  }
}

await main();
