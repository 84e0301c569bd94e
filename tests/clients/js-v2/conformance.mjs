// Runs the tool-call scenario (../tool_calls.json) through the official MCP TypeScript client
// v2 (@modelcontextprotocol/client) over Streamable HTTP; see ../scenario.mjs for the report.
// v2 validates a successful result's structuredContent against the listed outputSchema and
// throws ProtocolError -32602 when it does not conform (it skips isError results, which the
// Python side checks); we record that as clientError. Read by
// tests/clients/test_typescript_client_v2.py.
//
// ORCHESTRATOR_PROTOCOL chooses the revision with the client's own options:
//   2026-07-28 (a modern revision)    versionNegotiation: { mode: { pin } }: server/discover
//                                     must offer it, no fallback to initialize
//   auto                              versionNegotiation: { mode: "auto" }: server/discover,
//                                     initialize only if the server is not modern
//   2025-11-25, 2025-06-18, ...       supportedProtocolVersions: [revision] with the default
//                                     "legacy" mode: initialize offers it and accepts only it
//
// Usage: ORCHESTRATOR_URL=http://127.0.0.1:8000 ORCHESTRATOR_TOKEN=... \
//        ORCHESTRATOR_PROTOCOL=2026-07-28 node conformance.mjs

import { readFileSync } from "node:fs";
import {
  Client,
  LATEST_PROTOCOL_VERSION,
  ProtocolError,
  StreamableHTTPClientTransport,
  SUPPORTED_PROTOCOL_VERSIONS,
} from "@modelcontextprotocol/client";
import { fail, recordingFetch, report, runScenario, settings } from "../scenario.mjs";

function sdkVersion() {
  const manifest = new URL("./node_modules/@modelcontextprotocol/client/package.json", import.meta.url);
  return JSON.parse(readFileSync(manifest)).version;
}

function clientOptions(revision) {
  if (!revision) return {};
  if (revision === "auto") return { versionNegotiation: { mode: "auto" } };
  // SUPPORTED_PROTOCOL_VERSIONS lists the initialize-era revisions; a modern one (2026-07-28
  // and later) is reached through server/discover only, and the client refuses to pin others.
  if (SUPPORTED_PROTOCOL_VERSIONS.includes(revision)) return { supportedProtocolVersions: [revision] };
  return { versionNegotiation: { mode: { pin: revision } } };
}

async function main() {
  const { url, token, revision } = settings();
  const wire = [];
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: recordingFetch(wire),
  });
  const client = new Client({ name: "orchestrator-conformance", version: "2.0.0" }, clientOptions(revision));
  await client.connect(transport);
  const negotiated = {
    version: client.getNegotiatedProtocolVersion() ?? null,
    era: client.getProtocolEra() ?? null,
    server: client.getServerVersion() ?? null,
    discover: client.getDiscoverResult() ?? null,
  };
  // Listing caches each tool's outputSchema validator, which callTool then applies.
  const { tools } = await client.listTools();
  const outcomes = await runScenario(tools, (name, args) => client.callTool({ name, arguments: args }),
                                     (error) => error instanceof ProtocolError);
  await client.close();
  report({
    tools: tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema })),
    outcomes,
    negotiated,
    sdk: { package: "@modelcontextprotocol/client", version: sdkVersion(),
           latestProtocolVersion: LATEST_PROTOCOL_VERSION,
           supportedProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS, options: clientOptions(revision) },
    wire,
  });
}

main().catch(fail);
