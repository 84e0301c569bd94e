// Runs the tool-call scenario (../tool_calls.json) through the official MCP TypeScript SDK 1.x
// client (@modelcontextprotocol/sdk) over Streamable HTTP; see ../scenario.mjs for the report.
// The SDK validates every result's structuredContent (errors included) against the tool's
// outputSchema and throws McpError -32602 when it does not conform; we record that as
// clientError. Read by tests/clients/test_typescript_sdk.py.
//
// Protocol revisions: 1.x speaks only the initialize handshake. Its initialize always offers
// LATEST_PROTOCOL_VERSION (2025-11-25) and it accepts any of SUPPORTED_PROTOCOL_VERSIONS the
// server answers; it has no option to choose the offer, no server/discover and no 2026-07-28.
// ORCHESTRATOR_PROTOCOL=2025-06-18 therefore rewrites the offer on the wire (recordingFetch),
// so the server answers 2025-06-18 and the client runs the session at that revision.
//
// Usage: ORCHESTRATOR_URL=http://127.0.0.1:8000 ORCHESTRATOR_TOKEN=... \
//        [ORCHESTRATOR_PROTOCOL=2025-11-25|2025-06-18] node conformance.mjs

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { LATEST_PROTOCOL_VERSION, McpError, SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { fail, recordingFetch, report, runScenario, settings } from "../scenario.mjs";

function sdkVersion() {
  const manifest = new URL("./node_modules/@modelcontextprotocol/sdk/package.json", import.meta.url);
  return JSON.parse(readFileSync(manifest)).version;
}

async function main() {
  const { url, token, revision } = settings();
  if (revision && !SUPPORTED_PROTOCOL_VERSIONS.includes(revision)) {
    throw new Error(`@modelcontextprotocol/sdk ${sdkVersion()} cannot speak ${revision}`);
  }
  const wire = [];
  const rewriteOffer = revision && revision !== LATEST_PROTOCOL_VERSION ? revision : null;
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(wire, { rewriteOffer }),
  });
  const client = new Client({ name: "orchestrator-conformance", version: "1.0.0" });
  await client.connect(transport);
  const negotiated = { version: transport.protocolVersion ?? null,
                       server: client.getServerVersion() ?? null };
  // Listing caches each tool's outputSchema validator, which callTool then applies.
  const { tools } = await client.listTools();
  const outcomes = await runScenario(tools, (name, args) => client.callTool({ name, arguments: args }),
                                     (error) => error instanceof McpError);
  await client.close();
  report({
    tools: tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema })),
    outcomes,
    negotiated,
    sdk: { package: "@modelcontextprotocol/sdk", version: sdkVersion(),
           latestProtocolVersion: LATEST_PROTOCOL_VERSION,
           supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS, rewroteOffer: rewriteOffer },
    wire,
  });
}

main().catch(fail);
