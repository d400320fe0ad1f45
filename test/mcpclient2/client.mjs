#!/usr/bin/env node
// MCP client CLI used by toolhost's end-to-end tests, on the official
// TypeScript SDK v2 (@modelcontextprotocol/client), which speaks both the
// 2025-11-25 revision (initialize, sessions) and 2026-07-28 (server/discover,
// stateless HTTP, per-request _meta). See README.md.
//
//   node client.mjs stdio [--protocol-version V] [options] -- <command> [args...]
//   node client.mjs http <url> [--protocol-version V] [--token TOKEN] [options]
//
// The script protocol (steps in, one JSON line out per step, exit codes) is
// test/mcpclient/script.mjs, shared with the SDK v1 client.

import { Client, ProtocolError, SdkError, SdkErrorCode, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import {
  COMMON_OPTIONS_USAGE,
  ListChangedCounter,
  STEPS_USAGE,
  UsageError,
  checkServerExit,
  connectOrDie,
  runSteps,
  setUp,
  newTransport,
} from '../mcpclient/script.mjs';

const USAGE = `usage:
  node client.mjs stdio [options] -- <command> [args...]
  node client.mjs http <url> [--token TOKEN] [options]
options:
  --protocol-version V   2025-11-25 (or another 2025-era revision): initialize offering only V;
                         2026-07-28: server/discover pinned to V, no fallback;
                         auto: the SDK's probe (server/discover, falling back to initialize);
                         default: the SDK's default (initialize, the SDK's newest 2025-era revision)
  --elicit approve|deny  declare form elicitation and answer every request with {approve: true|false}
${COMMON_OPTIONS_USAGE}
${STEPS_USAGE}`;

const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion';
const FIRST_MODERN_REVISION = '2026-07-28';

// The SDK's local failures that end the connection: the script ends too.
const FATAL_SDK_ERRORS = new Set([SdkErrorCode.ConnectionClosed, SdkErrorCode.NotConnected, SdkErrorCode.SendFailed]);

function clientOptions(version) {
  if (version === undefined) return {};
  if (version === 'auto') return { versionNegotiation: { mode: 'auto' } };
  if (!/^\d{4}-\d{2}-\d{2}$/.test(version)) throw new UsageError(`--protocol-version: want a revision like 2025-11-25, or auto; got ${JSON.stringify(version)}`);
  if (version >= FIRST_MODERN_REVISION) {
    return { supportedProtocolVersions: [version], versionNegotiation: { mode: { pin: version } } };
  }
  return { supportedProtocolVersions: [version], versionNegotiation: { mode: 'legacy' } };
}

function errorData(e) {
  if (e instanceof ProtocolError) {
    const pe = { code: e.code, message: e.message };
    if (e.data !== undefined) pe.data = e.data;
    return { protocolError: pe };
  }
  if (e instanceof SdkError && !FATAL_SDK_ERRORS.has(e.code)) {
    const se = { code: e.code, message: e.message };
    if (e.data !== undefined) se.data = e.data;
    return { sdkError: se };
  }
  return undefined;
}

function describe(err) {
  const status = err?.data?.status !== undefined ? `HTTP ${err.data.status}: ` : '';
  const code = err instanceof SdkError ? `${err.code}: ` : '';
  const cause = err?.cause?.message ? ` (${err.cause.message})` : '';
  return `${code}${status}${err?.message ?? err}${cause}`;
}

// Wire records what this client actually sent, so a test can tell the
// revision on the wire from the one the SDK reports: the methods of the
// requests, the protocol version each request's _meta claims (2026-07-28),
// and over HTTP the MCP-Protocol-Version headers and the session ids the
// server handed out.
class Wire {
  methods = [];
  metaVersions = [];
  headerVersions = [];
  sessionIds = [];

  static #add(list, v) {
    if (v !== undefined && v !== null && !list.includes(v)) list.push(v);
  }

  watchTransport(transport) {
    const send = transport.send.bind(transport);
    transport.send = (message, options) => {
      for (const m of Array.isArray(message) ? message : [message]) {
        if (m.method === undefined || m.id === undefined) continue; // responses and notifications
        Wire.#add(this.methods, m.method);
        Wire.#add(this.metaVersions, m.params?._meta?.[META_PROTOCOL_VERSION]);
      }
      return send(message, options);
    };
  }

  fetch() {
    return async (url, init) => {
      Wire.#add(this.headerVersions, new Headers(init?.headers).get('mcp-protocol-version'));
      const res = await fetch(url, init);
      Wire.#add(this.sessionIds, res.headers.get('mcp-session-id'));
      return res;
    };
  }
}

async function main() {
  const flags = {
    '--protocol-version': (o, next) => {
      o.protocolVersion = next();
    },
    '--elicit': (o, next) => {
      o.elicit = next();
      if (o.elicit !== 'approve' && o.elicit !== 'deny') throw new UsageError(`--elicit: want approve or deny, got ${JSON.stringify(o.elicit)}`);
    },
  };
  const setup = await setUp(USAGE, flags, (o) => clientOptions(o.protocolVersion));
  if (!setup) return;
  const { opts, config: options, stepSource } = setup;

  const wire = new Wire();
  const transport = newTransport(opts, StdioClientTransport, StreamableHTTPClientTransport, { fetch: wire.fetch() });
  let child = null;
  wire.watchTransport(transport);

  const client = new Client({ name: 'toolhost-e2e-client2', version: '0.0.0' }, {
    ...options,
    ...(opts.elicit !== undefined && { capabilities: { elicitation: { form: {} } } }),
  });
  // Elicitation: on 2025-11-25 the server asks with elicitation/create; on
  // 2026-07-28 its tools/call answer is input_required and the SDK calls
  // this same handler, then retries the call with the answer (MRTR).
  const elicitations = [];
  if (opts.elicit !== undefined) {
    client.setRequestHandler('elicitation/create', (req) => {
      elicitations.push({ message: req.params.message, requestedSchema: req.params.requestedSchema });
      return { action: 'accept', content: { approve: opts.elicit === 'approve', reason: `mcpclient2 --elicit ${opts.elicit}` } };
    });
  }
  const listChanged = new ListChangedCounter();
  // Registered before connect so nothing sent right after initialization is
  // missed. On 2025-11-25 the server sends it unasked (over HTTP on the GET
  // stream); on 2026-07-28 only on a subscriptions/listen stream, opened below.
  client.setNotificationHandler('notifications/tools/list_changed', () => listChanged.notify());
  client.onerror = (err) => {
    process.stderr.write(`mcpclient: transport error: ${describe(err)}\n`);
  };

  if (!(await connectOrDie(client, transport, opts, describe))) return;
  if (opts.mode === 'stdio') child = transport._process ?? null; // for the exit check below
  let subscription;
  if (client.getProtocolEra() === 'modern' && client.getServerCapabilities()?.tools?.listChanged) {
    try {
      subscription = await client.listen({ toolsListChanged: true }, { timeout: opts.timeoutMs });
    } catch (e) {
      // wait_list_changed steps then time out; the script goes on.
      process.stderr.write(`mcpclient: subscriptions/listen failed: ${describe(e)}\n`);
    }
  }

  const exitCode = await runSteps(opts, stepSource, {
    // cacheMode 'refresh': every list step asks the server (2026-07-28
    // results may carry ttlMs, and the test wants what the server says now).
    listPage: (cursor, timeout) => client.listTools(cursor ? { cursor } : undefined, { timeout, cacheMode: 'refresh' }),
    callTool: (params, { validate, timeoutMs, onprogress }) =>
      validate
        ? client.callTool(params, { timeout: timeoutMs, onprogress })
        : client.request({ method: 'tools/call', params }, { timeout: timeoutMs, onprogress }),
    errorData,
    info: () => ({
      protocolVersion: client.getNegotiatedProtocolVersion(),
      era: client.getProtocolEra(),
      serverInfo: client.getServerVersion(),
      capabilities: client.getServerCapabilities(),
      instructions: client.getInstructions(),
      sessionId: opts.mode === 'http' ? transport.sessionId : undefined,
      listening: subscription !== undefined,
      elicitations,
      wire,
    }),
    listChanged,
    describe,
  });

  // Clean shutdown: end the subscription and the HTTP session (2025-11-25
  // has one, 2026-07-28 none), or close the server's stdin.
  try {
    await subscription?.close();
  } catch (e) {
    process.stderr.write(`mcpclient: closing the subscription failed: ${describe(e)}\n`);
  }
  if (opts.mode === 'http' && transport.sessionId !== undefined) {
    try {
      await transport.terminateSession();
    } catch (e) {
      process.stderr.write(`mcpclient: terminating session failed: ${describe(e)}\n`);
    }
  }
  try {
    await client.close();
  } catch (e) {
    process.stderr.write(`mcpclient: close failed: ${describe(e)}\n`);
  }
  process.exitCode = await checkServerExit(child, opts, exitCode);
}

await main();
