// What the TypeScript client scripts share (js/conformance.mjs for @modelcontextprotocol/sdk
// 1.x, js-v2/conformance.mjs for @modelcontextprotocol/client 2.x). Imports no package, so
// either folder's node_modules serves.
//
// Each script runs the tool-call scenario (tool_calls.json) through its SDK, then calls every
// listed tool with an unknown field, and prints one JSON document on stdout:
//   tools       [{name, outputSchema}] as tools/list gave them
//   outcomes    [{tool, arguments, expect, isError, structuredContent, clientError}]
//   negotiated  what the client says it negotiated (version, ...)
//   sdk         what the SDK says about itself (version lists, ...)
//   wire        every HTTP request the client made, as recordingFetch saw it
// The Python side (tests/clients/revisions.py, conformance.py) checks all of it.

import { readFileSync } from "node:fs";

const REFERENCE = /^\$\{(\w+)\.([\w.]+)\}$/;
const UNKNOWN_FIELD_ARGUMENTS = { unexpectedField: true };
export const PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion";

export function settings() {
  return {
    url: process.env.ORCHESTRATOR_URL,
    token: process.env.ORCHESTRATOR_TOKEN,
    // A protocol revision ("2026-07-28", "2025-11-25", ...), "auto", or unset (the SDK's default).
    revision: process.env.ORCHESTRATOR_PROTOCOL || null,
  };
}

function resolve(value, answers) {
  if (Array.isArray(value)) return value.map((v) => resolve(v, answers));
  if (value && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, resolve(v, answers)]));
  }
  const match = typeof value === "string" ? REFERENCE.exec(value) : null;
  if (!match) return value;
  return match[2].split(".").reduce((found, key) => found[key], answers[match[1]]);
}

// A fetch for the SDK transport that records every exchange: the JSON-RPC method, the
// MCP-Protocol-Version header, the protocol version in params._meta (2026-07-28 envelope),
// the version an initialize offered, the HTTP status, and the answer to initialize and
// server/discover. `rewriteOffer` replaces the protocolVersion an initialize offers, for an
// SDK that has no option to choose it (the server then sees, and answers, that offer).
export function recordingFetch(wire, { rewriteOffer = null } = {}) {
  return async (input, init = {}) => {
    let message = null;
    if (typeof init.body === "string") {
      try {
        message = JSON.parse(init.body);
      } catch {
        message = null;
      }
    }
    if (rewriteOffer && message?.method === "initialize") {
      message.params.protocolVersion = rewriteOffer;
      init = { ...init, body: JSON.stringify(message) };
    }
    const headers = new Headers(init.headers);
    const entry = {
      httpMethod: init.method ?? "GET",
      rpcMethod: message?.method ?? null,
      protocolHeader: headers.get("mcp-protocol-version"),
      metaProtocolVersion: message?.params?._meta?.[PROTOCOL_VERSION_META_KEY] ?? null,
      offeredVersion: message?.method === "initialize" ? message.params?.protocolVersion : null,
      status: null,
      result: null,
      error: null,
    };
    wire.push(entry);
    const response = await fetch(input, init);
    entry.status = response.status;
    if ((response.headers.get("content-type") ?? "").includes("application/json")) {
      const answer = await response.clone().json().catch(() => null);
      entry.error = answer?.error ?? null;
      if (["initialize", "server/discover"].includes(entry.rpcMethod)) entry.result = answer?.result ?? null;
    }
    return response;
  };
}

// `call(tool, args)` resolves to {isError, structuredContent} or throws what the client raised.
// A transport failure ("fetch failed": a kept-alive connection closed under the request, seen
// once on a loaded machine) is retried once; `isProtocolError(error)` errors (the SDK's schema
// check included) never are. A retried call that had in fact run would break the step's
// expected outcome, not pass silently.
export async function runScenario(tools, call, isProtocolError) {
  const scenario = JSON.parse(readFileSync(new URL("./tool_calls.json", import.meta.url)));
  const once = async (tool, args) => {
    try {
      return await call(tool, args);
    } catch (error) {
      if (isProtocolError(error)) throw error;
      console.error(`retrying ${tool} after a transport failure: ${error.message} ${error.cause ?? ""}`);
      return await call(tool, args);
    }
  };
  const outcome = async (tool, args, expect) => {
    try {
      const result = await once(tool, args);
      return { tool, arguments: args, expect, isError: Boolean(result.isError),
               structuredContent: result.structuredContent ?? null, clientError: null };
    } catch (error) {
      return { tool, arguments: args, expect, isError: false, structuredContent: null,
               clientError: `${error.code ?? ""} ${error.message} ${error.cause ?? ""}`.trim() };
    }
  };
  const answers = {};
  const outcomes = [];
  for (const step of scenario.steps) {
    const found = await outcome(step.tool, resolve(step.arguments, answers), step.expect);
    if (step.as) answers[step.as] = found.structuredContent;
    outcomes.push(found);
  }
  for (const tool of tools) {
    // The expected code (the tool's validation code) is filled in by the Python side.
    outcomes.push(await outcome(tool.name, { ...UNKNOWN_FIELD_ARGUMENTS }, null));
  }
  return outcomes;
}

export function report(document) {
  process.stdout.write(JSON.stringify(document));
}

export function fail(error) {
  console.error(error);
  process.exit(1);
}
