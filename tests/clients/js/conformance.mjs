// Runs the tool-call scenario (../tool_calls.json) through the official MCP TypeScript SDK
// client over Streamable HTTP, then calls every listed tool with an unknown field.
// The SDK validates every result's structuredContent (errors included) against the
// tool's outputSchema and throws McpError -32602 when it does not conform; we record that
// as clientError. Prints one JSON document on stdout for tests/clients/test_typescript_sdk.py.
//
// Usage: ORCHESTRATOR_URL=http://127.0.0.1:8000 ORCHESTRATOR_TOKEN=... node conformance.mjs

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

const REFERENCE = /^\$\{(\w+)\.([\w.]+)\}$/;
const UNKNOWN_FIELD_ARGUMENTS = { unexpectedField: true };

function resolve(value, answers) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, answers));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, answers)]));
  }
  const match = typeof value === "string" ? REFERENCE.exec(value) : null;
  if (!match) return value;
  return match[2].split(".").reduce((found, key) => found[key], answers[match[1]]);
}

// Seen once on a loaded machine: "fetch failed" (a kept-alive connection closed under the
// request, which never reached the server). A transport failure is retried once; an
// McpError (the SDK's schema check included) never is, and a retried call that had in
// fact run would break the step's expected outcome, not pass silently.
async function callOnce(client, tool, args) {
  try {
    return await client.callTool({ name: tool, arguments: args });
  } catch (error) {
    if (error instanceof McpError) throw error;
    console.error(`retrying ${tool} after a transport failure: ${error.message} ${error.cause ?? ""}`);
    return await client.callTool({ name: tool, arguments: args });
  }
}

async function call(client, tool, args, expect) {
  try {
    const result = await callOnce(client, tool, args);
    return { tool, arguments: args, expect, isError: Boolean(result.isError),
             structuredContent: result.structuredContent ?? null, clientError: null };
  } catch (error) {
    return { tool, arguments: args, expect, isError: false, structuredContent: null,
             clientError: `${error.code ?? ""} ${error.message} ${error.cause ?? ""}`.trim() };
  }
}

async function main() {
  const url = process.env.ORCHESTRATOR_URL;
  const token = process.env.ORCHESTRATOR_TOKEN;
  const scenario = JSON.parse(readFileSync(new URL("../tool_calls.json", import.meta.url)));
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "orchestrator-conformance", version: "1.0.0" });
  await client.connect(transport);
  // Listing caches each tool's outputSchema validator, which callTool then applies.
  const { tools } = await client.listTools();
  const answers = {};
  const outcomes = [];
  for (const step of scenario.steps) {
    const outcome = await call(client, step.tool, resolve(step.arguments, answers), step.expect);
    if (step.as) answers[step.as] = outcome.structuredContent;
    outcomes.push(outcome);
  }
  for (const tool of tools) {
    // The expected code (the tool's validation code) is filled in by the Python side.
    outcomes.push(await call(client, tool.name, { ...UNKNOWN_FIELD_ARGUMENTS }, null));
  }
  await client.close();
  const listed = tools.map((t) => ({ name: t.name, outputSchema: t.outputSchema }));
  process.stdout.write(JSON.stringify({ tools: listed, outcomes }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
