// The official MCP TypeScript SDK's client driving `airlock mcp` over
// stdio, as an MCP-only agent would: list the tools, open a transaction,
// write in its staged tree, build there with run, read the diff, commit,
// and read the receipt through status. The SDK checks every structured
// result against the tool's output schema (a mismatch throws). Prints one
// JSON object of what it saw for TestE2EMCPTypeScriptSDK to judge.
//
// node client.cjs AIRLOCK_BINARY BASE (the SDK found through NODE_PATH)
const fs = require("fs");
const path = require("path");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");

const [bin, base] = process.argv.slice(2);

function texts(res) {
  return res.content.filter((c) => c.type === "text").map((c) => c.text).join("");
}

async function main() {
  const client = new Client({ name: "airlock-e2e", version: "0" });
  // The whole environment: the test's state directory travels in it.
  const transport = new StdioClientTransport({ command: bin, args: ["mcp"], cwd: base, env: process.env, stderr: "inherit" });
  await client.connect(transport);
  const out = { server: client.getServerVersion() };
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name).sort();
  out.withoutOutputSchema = tools.tools.filter((t) => !t.outputSchema).map((t) => t.name);

  const call = async (name, args) => {
    const res = await client.callTool({ name, arguments: args });
    if (res.isError) throw new Error(`${name}: tool error: ${texts(res)}`);
    return res;
  };
  const opened = (await call("open", { path: "." })).structuredContent;
  out.open = opened;
  fs.writeFileSync(path.join(opened.path, "main.txt"), "main, edited\n");
  const ran = await call("run", { id: opened.id, command: "cat main.txt > built.txt && echo built && pwd" });
  out.run = { result: ran.structuredContent, text: texts(ran) };
  const failed = await call("run", { id: opened.id, command: "echo FAIL >&2; exit 2" });
  out.runFailed = { result: failed.structuredContent, text: texts(failed) };
  const diff = await call("diff", { id: opened.id });
  out.diff = { result: diff.structuredContent, text: texts(diff) };
  out.commit = (await call("commit", { id: opened.id })).structuredContent;
  const status = (await call("status", { id: opened.id, with_receipt: true })).structuredContent;
  out.status = { status: status.status, receipt: status.receipt, receiptDigest: status.receipt_body && status.receipt_body.digest };
  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => {
  process.stderr.write(`client.cjs: ${err.stack || err}\n`);
  process.exit(1);
});
