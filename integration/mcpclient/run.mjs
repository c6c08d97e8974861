// Drives POST /mcp with the official MCP TypeScript SDK's client (MCP
// 2025-11-25, with a session's initialize) and prints what it saw as one
// JSON object, for integration/mcp_server_test.go:
//
//   node run.mjs URL KEY CALLS_JSON
//
// CALLS_JSON is an array of {"name": tool, "arguments": {...}}; each call
// asks for progress. The output is {"protocolVersion": "...", "tools":
// [...], "results": [{"result": {...}, "progress": n, "error": "..."}]}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, key, callsJSON] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: "agenttask-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const results = [];
for (const call of JSON.parse(callsJSON)) {
  let progress = 0;
  try {
    const result = await client.callTool(call, undefined, {
      onprogress: () => {
        progress++;
      },
      resetTimeoutOnProgress: true,
      timeout: 60_000,
    });
    results.push({ result, progress });
  } catch (e) {
    results.push({ error: String(e?.message ?? e), progress });
  }
}
await client.close();
process.stdout.write(JSON.stringify({ protocolVersion: transport.protocolVersion, tools, results }));
