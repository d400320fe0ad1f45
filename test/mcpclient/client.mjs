#!/usr/bin/env node
// MCP client CLI used by toolhost's end-to-end tests, on the official
// TypeScript SDK v1 (@modelcontextprotocol/sdk). See README.md.
//
//   node client.mjs stdio [--script FILE] [options] -- <command> [args...]
//   node client.mjs http <url> [--token TOKEN] [--script FILE] [options]
//
// Steps come from --script FILE or stdin: either a JSON array of steps, or
// (when the input does not start with '[') one JSON step object per line,
// executed as each line arrives. Every step prints exactly one JSON line on
// stdout. Diagnostics go to stderr. The script protocol is script.mjs,
// shared with test/mcpclient2 (SDK v2).
//
// Exit codes: 0 all steps ran (tool errors and JSON-RPC errors are data);
// 1 connection failure; 2 usage or script error; 3 transport failure after
// connecting (e.g. the server died mid-script); 4 --require-clean-exit was
// given and the stdio server did not exit by itself with status 0 after its
// stdin was closed.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  COMMON_OPTIONS_USAGE,
  ListChangedCounter,
  STEPS_USAGE,
  checkServerExit,
  connectOrDie,
  runSteps,
  setUp,
  newTransport,
} from './script.mjs';

const USAGE = `usage:
  node client.mjs stdio [options] -- <command> [args...]
  node client.mjs http <url> [--token TOKEN] [options]
options:
${COMMON_OPTIONS_USAGE}
${STEPS_USAGE}`;

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
  const setup = await setUp(USAGE, {});
  if (!setup) return;
  const { opts, stepSource } = setup;

  const transport = newTransport(opts, StdioClientTransport, StreamableHTTPClientTransport);
  let child = null;
  let negotiatedVersion;
  const origSetVersion = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    negotiatedVersion = v;
    origSetVersion?.(v);
  };

  const client = new Client({ name: 'toolhost-e2e-client', version: '0.0.0' });
  const listChanged = new ListChangedCounter();
  // Registered before connect so nothing sent right after initialization is missed.
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => listChanged.notify());
  client.onerror = (err) => {
    process.stderr.write(`mcpclient: transport error: ${describe(err)}\n`);
  };

  if (!(await connectOrDie(client, transport, opts, describe))) return;
  if (opts.mode === 'stdio') child = transport._process ?? null; // for the exit check below

  const exitCode = await runSteps(opts, stepSource, {
    listPage: (cursor, timeout) => client.listTools(cursor ? { cursor } : {}, { timeout }),
    callTool: (params, { validate, timeoutMs, onprogress }) =>
      validate
        ? client.callTool(params, CallToolResultSchema, { timeout: timeoutMs, onprogress })
        : client.request({ method: 'tools/call', params }, CallToolResultSchema, { timeout: timeoutMs, onprogress }),
    errorData: (e) => (e instanceof McpError ? { protocolError: protocolErrorOf(e) } : undefined),
    info: () => ({
      protocolVersion: negotiatedVersion,
      serverInfo: client.getServerVersion(),
      capabilities: client.getServerCapabilities(),
      instructions: client.getInstructions(),
    }),
    listChanged,
    describe,
  });

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
  process.exitCode = await checkServerExit(child, opts, exitCode);
}

await main();
