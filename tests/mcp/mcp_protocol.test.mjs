// What `maf-sandbox mcp` answers to malformed JSON-RPC (issue 30): bad JSON, a batch, a huge
// line, a missing or a null id, a wrong version — each gets the protocol's error and the
// server keeps serving. These are bytes no well-behaved client sends, so they are written raw;
// everything a client does right is left to the official SDK (mcp_server.test.mjs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

const cli = process.env.MAF_SANDBOX_CLI;
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-protocol-'));
// A root host runs guests as an unprivileged uid that must be able to reach the backend's root.
chmodSync(scratch, 0o711);
const specFile = join(scratch, 'spec.json');
writeFileSync(specFile, JSON.stringify({ kind: 'mcp-protocol', requires: ['exec', 'files_in'] }));
const configFile = join(scratch, 'config.json');
writeFileSync(configFile, JSON.stringify({ root: join(scratch, 'root') }));

let server;
let lines;
const pending = [];
const received = [];

function next() {
  if (received.length) return Promise.resolve(received.shift());
  return new Promise((resolve) => pending.push(resolve));
}
function send(text) {
  server.stdin.write(text + '\n');
}
async function ask(text) {
  send(text);
  return next();
}

before(async () => {
  server = spawn(cli, ['mcp', '--backend', 'process', '--config', configFile, '--spec', specFile,
                       '--min-isolation', 'none', '--scope', 'mcp-protocol-test'], { stdio: ['pipe', 'pipe', 'inherit'] });
  server.once('exit', (code) => {
    while (pending.length) pending.shift()({ exited: code });
  });
  lines = createInterface({ input: server.stdout });
  lines.on('line', (line) => {
    const message = JSON.parse(line);  // every line on stdout is one JSON message, or this throws
    if (pending.length) pending.shift()(message);
    else received.push(message);
  });
  const init = await ask(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } }));
  assert.equal(init.result.protocolVersion, '2025-11-25');
  send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
});

after(async () => {
  server.stdin.end();
  const code = await new Promise((resolve) => server.once('exit', resolve));
  assert.equal(code, 0);
});

async function stillServing(id) {
  const pong = await ask(JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' }));
  assert.deepEqual(pong, { jsonrpc: '2.0', id, result: {} });
}

test('issue 30: text that is not JSON is a parse error (-32700, id null)', async () => {
  const r = await ask('{"jsonrpc": "2.0", "id": 1, "method": ');
  assert.equal(r.error.code, -32700);
  assert.equal(r.id, null);
  await stillServing(101);
});

test('issue 30: a batch is an invalid request (-32600): MCP 2025-06-18 removed batching', async () => {
  const r = await ask(JSON.stringify([{ jsonrpc: '2.0', id: 2, method: 'ping' }]));
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /batch/);
  await stillServing(102);
});

test('issue 30: a line over the size limit is refused without being buffered, and the stream goes on', async () => {
  const huge = JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping', params: { pad: 'x'.repeat(17 << 20) } });
  const r = await ask(huge);
  assert.equal(r.error.code, -32600);
  assert.match(r.error.message, /bytes is over/);
  await stillServing(103);
});

test('issue 30: a null id, a structured id and a wrong version are invalid requests; the id comes back when it can', async () => {
  const nullId = await ask(JSON.stringify({ jsonrpc: '2.0', id: null, method: 'ping' }));
  assert.equal(nullId.error.code, -32600);
  const objectId = await ask(JSON.stringify({ jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }));
  assert.equal(objectId.error.code, -32600);
  const version = await ask(JSON.stringify({ jsonrpc: '1.0', id: 'v', method: 'ping' }));
  assert.equal(version.error.code, -32600);
  assert.equal(version.id, 'v');
  const answerWithoutId = await ask(JSON.stringify({ jsonrpc: '2.0', result: {} }));
  assert.equal(answerWithoutId.error.code, -32600);
  await stillServing(104);
});

test('issue 30: a request without an id is a notification and gets no answer; an unknown method is -32601', async () => {
  send(JSON.stringify({ jsonrpc: '2.0', method: 'ping' }));
  const unknown = await ask(JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'resources/list' }));
  assert.equal(unknown.id, 5, 'the notification was not answered: the next answer is this one');
  assert.equal(unknown.error.code, -32601);
  const params = await ask(JSON.stringify({ jsonrpc: '2.0', id: 6, method: 'tools/call', params: [1, 2] }));
  assert.equal(params.error.code, -32602);
  await stillServing(105);
});

test('issue 30: `maf-sandbox tools` prints the served definitions as MCP tools and as OpenAI function tools', async () => {
  const { spawnSync } = await import('node:child_process');
  const common = ['--backend', 'process', '--config', configFile, '--spec', specFile, '--min-isolation', 'none'];
  const mcp = spawnSync(cli, ['tools', ...common, '--format', 'mcp'], { encoding: 'utf8' });
  assert.equal(mcp.status, 0, mcp.stderr);
  const tools = JSON.parse(mcp.stdout);
  // As `mcp` lists them: the handle tools too (issue 51, MCP-4).
  assert.deepEqual(tools.map((t) => t.name).sort(),
                   ['close_sandbox', 'open_sandbox', 'read_file', 'run_command', 'write_file']);
  assert.ok(tools.every((t) => t.inputSchema.type === 'object' && typeof t.description === 'string'));
  const openai = spawnSync(cli, ['tools', ...common, '--format', 'openai'], { encoding: 'utf8' });
  assert.equal(openai.status, 0, openai.stderr);
  const functions = JSON.parse(openai.stdout);
  assert.ok(functions.every((f) => f.type === 'function' && f.function.parameters.type === 'object'));
  // An OpenAI host calls the library, where a conversation keeps its sandbox: no handle tools.
  assert.deepEqual(functions.map((f) => f.function.name).sort(), ['read_file', 'run_command', 'write_file']);
  const bad = spawnSync(cli, ['tools', ...common, '--format', 'xml'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /'xml'/);
});
