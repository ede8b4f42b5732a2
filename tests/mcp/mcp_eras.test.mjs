// Both MCP eras on one `maf-sandbox mcp` (issue 51; docs/mcp.md "Two eras on one server",
// "Sandbox handles"): the official v2 client (`@modelcontextprotocol/client`, pinned to
// 2026-07-28) and the v1 SDK (`@modelcontextprotocol/sdk`, 2025-11-25) side by side against
// one server process over Streamable HTTP, and the v2 client over stdio; on the backend
// MCP_TEST_BACKEND names (process by default). Discover, list, a handle kept across three
// calls, a forged, a closed and an expired handle refused, the revision's own errors for bad
// envelopes and headers, and a server killed with handles open, then `dispose-scope`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startHttpServer } from './http_server.mjs';

const cli = process.env.MAF_SANDBOX_CLI;
assert.ok(cli && existsSync(cli), 'MAF_SANDBOX_CLI must name the built maf-sandbox');
const backend = process.env.MCP_TEST_BACKEND ?? 'process';
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-eras-'));
chmodSync(scratch, 0o711);  // a root host runs guests as an unprivileged uid
const scope = `mcp-eras-${process.pid}`;
const root = join(scratch, 'process-root');

const engine = {
  process: {
    config: { root },
    image: undefined,
    // docs/backends/process.md "State layout": <root>/<conversation>/<sandbox>/meta.json.
    leftovers: (thread) => {
      if (!existsSync(root)) return [];
      return readdirSync(root, { withFileTypes: true })
        .filter((c) => c.isDirectory())
        .flatMap((c) => readdirSync(join(root, c.name)).map((d) => join(c.name, d)))
        .filter((d) => {
          try {
            const meta = JSON.parse(readFileSync(join(root, d, 'meta.json'), 'utf8'));
            return meta.scope === scope && meta.thread_id === thread;
          } catch {
            return false;
          }
        });
    },
  },
  docker: {
    config: { transport: 'auto' },
    image: 'maf-sandbox-test/busybox:1',
    leftovers: (thread) => {
      const r = spawnSync('docker', ['ps', '-aq', '--filter', `label=maf-sandbox.scope=${scope}`,
                                     '--filter', `label=maf-sandbox.thread=${thread}`], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return r.stdout.split('\n').filter(Boolean);
    },
  },
}[backend];
assert.ok(engine, `no test set-up for backend ${backend}`);

const configFile = join(scratch, 'config.json');
writeFileSync(configFile, JSON.stringify(engine.config));
const specFile = join(scratch, 'spec.json');
writeFileSync(specFile, JSON.stringify({ kind: 'eras', requires: ['exec', 'files_in', 'files_out'],
                                         ...(engine.image ? { image: engine.image } : {}) }));
const otherSpec = join(scratch, 'other.json');
writeFileSync(otherSpec, JSON.stringify({ kind: 'eras-other', requires: ['exec'],
                                          ...(engine.image ? { image: engine.image } : {}) }));

function serverArgs(thread, extra = []) {
  return ['mcp', '--backend', backend, '--config', configFile, '--spec', specFile, '--spec', otherSpec,
          '--min-isolation', 'none', '--scope', scope, '--thread', thread, ...extra];
}
// On Docker (stage 50) only the handle test and the cancellations in a handle (AGENT-7: how
// the program is stopped is the backend's) are registered — what else differs per backend is
// the sandbox a handle keeps, not the protocol — so the engine stage stays short.
const registered = (name) => backend === 'process' || name.includes('across three calls') || name.includes('AGENT-7');
const check = (name, fn) => (registered(name) ? test(name, fn) : undefined);
const pinned = { versionNegotiation: { mode: { pin: '2026-07-28' } } };
const text = (r) => r.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

let http;  // one server process both clients reach
let v2;
let v1;
before(async () => {
  http = await startHttpServer(cli, serverArgs('shared', ['--http', '127.0.0.1:0', '--handle-idle', '2s',
                                                          '--max-sandboxes', '3']));
  v2 = new ClientV2({ name: 'eras-v2', version: '1.0.0' }, pinned);
  await v2.connect(new HttpV2(new URL(http.url)));
  v1 = new ClientV1({ name: 'eras-v1', version: '1.0.0' });
  await v1.connect(new HttpV1(new URL(http.url)));
});
after(async () => {
  await v2?.close();
  await v1?.close();
  if (http && http.server.exitCode === null) {
    http.server.kill('SIGTERM');
    await new Promise((r) => http.server.once('exit', r));
  }
});

async function openSandbox(client, args = {}) {
  const r = await client.callTool({ name: 'open_sandbox', arguments: args });
  assert.equal(r.isError, false, text(r));
  assert.match(r.structuredContent.sandbox, /^sbx-[0-9a-f]{32}$/);
  return r.structuredContent.sandbox;
}

check('MCP-1, MCP-3: the v2 client negotiates 2026-07-28 through server/discover and lists the handle tools', async () => {
  assert.equal(v2.getNegotiatedProtocolVersion(), '2026-07-28');
  assert.equal(v2.getServerVersion()?.name, 'maf-sandbox');
  const { tools } = await v2.listTools();
  const names = tools.map((t) => t.name);
  for (const n of ['run_command', 'write_file', 'read_file', 'open_sandbox', 'close_sandbox']) assert.ok(names.includes(n), n);
  assert.ok(tools.find((t) => t.name === 'run_command').inputSchema.properties.sandbox, 'run_command takes `sandbox`');
  assert.deepEqual(tools.find((t) => t.name === 'open_sandbox').inputSchema.properties.spec.enum, ['eras', 'eras-other']);
});

check('MCP-1: the v1 SDK keeps the 2025-11-25 session on the same server', async () => {
  assert.equal(v1.getServerVersion()?.name, 'maf-sandbox');
  const r = await v1.callTool({ name: 'run_command', arguments: { command: 'echo legacy' } });
  assert.equal(r.isError, false, text(r));
  assert.match(text(r), /legacy/);
});

check('MCP-4: a handle keeps one sandbox across three calls (write, run, read)', async () => {
  const sandbox = await openSandbox(v2);
  let r = await v2.callTool({ name: 'write_file', arguments: { sandbox, path: 'kept.txt', content: 'across calls\n' } });
  assert.equal(r.isError, false, text(r));
  r = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'cat kept.txt > copy.txt; cat copy.txt >> kept.txt; wc -l < kept.txt' } });
  assert.equal(r.isError, false, text(r));
  assert.match(text(r), /\b2\b/);
  r = await v2.callTool({ name: 'read_file', arguments: { sandbox, path: 'kept.txt' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(text(r).split('across calls').length - 1, 2, text(r));
  // The v1 client may use the same handle: it is the server's, not a session's.
  r = await v1.callTool({ name: 'read_file', arguments: { sandbox, path: 'kept.txt' } });
  assert.equal(r.isError, false, text(r));
  // Without a handle, a 2026-07-28 call gets a fresh sandbox: the file is not there.
  r = await v2.callTool({ name: 'read_file', arguments: { path: 'kept.txt' } });
  assert.equal(r.isError, true, text(r));
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
});

check('MCP-4: a forged or malformed handle is refused, naming the problem', async () => {
  const real = await openSandbox(v2);
  // One hex digit changed: well-formed, never issued.
  const forged = real.slice(0, -1) + (real.endsWith('0') ? '1' : '0');
  let r = await v2.callTool({ name: 'run_command', arguments: { sandbox: forged, command: 'true' } });
  assert.equal(r.isError, true);
  assert.match(text(r), /unknown sandbox handle/);
  r = await v2.callTool({ name: 'run_command', arguments: { sandbox: '../../etc', command: 'true' } });
  assert.equal(r.isError, true);
  assert.match(text(r), /not a sandbox handle/);
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox: real } });
});

check('MCP-4, MCP-5: a closed handle is refused as closed and its sandbox is gone', async () => {
  const sandbox = await openSandbox(v2);
  await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'true' } });
  const before = engine.leftovers('shared').length;
  const closed = await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
  assert.equal(closed.isError, false, text(closed));
  assert.equal(engine.leftovers('shared').length, before - 1, 'close_sandbox disposed the sandbox');
  const r = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'true' } });
  assert.equal(r.isError, true);
  assert.match(text(r), /handle is closed/);
});

check('MCP-4, MCP-5: an idle handle expires (--handle-idle 2s) and is refused as expired', async () => {
  const sandbox = await openSandbox(v2);
  await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'true' } });
  await new Promise((r) => setTimeout(r, 3000));  // past the idle timeout, whatever the reaper did
  const r = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'true' } });
  assert.equal(r.isError, true);
  assert.match(text(r), /handle is expired/);
});

check('MCP-4: the per-server cap (--max-sandboxes 3) refuses a fourth open handle', async () => {
  const handles = [await openSandbox(v2), await openSandbox(v1), await openSandbox(v2, { spec: 'eras-other' })];
  const r = await v2.callTool({ name: 'open_sandbox', arguments: {} });
  assert.equal(r.isError, true);
  assert.match(text(r), /cap of 3 open sandboxes/);
  for (const sandbox of handles) await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
  await openSandbox(v2).then((sandbox) => v2.callTool({ name: 'close_sandbox', arguments: { sandbox } }));
});

/// A raw 2026-07-28 POST: `meta` replaces the envelope, `headers` the standard headers.
async function rawPost(method, params, { meta, headers } = {}) {
  const envelope = meta ?? { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                             'io.modelcontextprotocol/clientCapabilities': {} };
  const body = { jsonrpc: '2.0', id: 7, method, params: { ...params, _meta: envelope } };
  const res = await fetch(http.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
               ...(headers ?? { 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': method,
                                ...((params.name ?? params.taskId) ? { 'Mcp-Name': params.name ?? params.taskId } : {}) }) },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

check('MCP-3: a raw stateless server/discover lists every revision', async () => {
  const { status, body } = await rawPost('server/discover', {});
  assert.equal(status, 200);
  assert.equal(body.result.resultType, 'complete');
  assert.deepEqual(body.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18']);
});

check('MCP-2: an unsupported version is -32022 listing the supported ones', async () => {
  const { status, body } = await rawPost('tools/list', {}, {
    meta: { 'io.modelcontextprotocol/protocolVersion': '1999-01-01', 'io.modelcontextprotocol/clientCapabilities': {} },
    headers: { 'MCP-Protocol-Version': '1999-01-01', 'Mcp-Method': 'tools/list' } });
  assert.equal(status, 400);
  assert.equal(body.error.code, -32022);
  assert.equal(body.error.data.requested, '1999-01-01');
  assert.ok(body.error.data.supported.includes('2026-07-28'));
});

check('MCP-2: a malformed or incomplete _meta envelope is -32602 naming the key', async () => {
  let { status, body } = await rawPost('tools/list', {}, { meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } });
  assert.equal(status, 400);
  assert.equal(body.error.code, -32602);
  assert.match(body.error.message, /clientCapabilities/);
  ({ status, body } = await rawPost('tools/list', {}, { meta: { 'io.modelcontextprotocol/protocolVersion': 20260728,
                                                                'io.modelcontextprotocol/clientCapabilities': {} } }));
  assert.equal(body.error.code, -32602);
  assert.match(body.error.message, /protocolVersion must be a string/);
});

check('MCP-2: missing or disagreeing Mcp-Method / Mcp-Name headers are -32020', async () => {
  const cases = [
    [{ 'MCP-Protocol-Version': '2026-07-28' }, /Mcp-Method header is missing/],
    [{ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/list' }, /Mcp-Method 'tools\/list' disagrees/],
    [{ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call' }, /Mcp-Name header is missing/],
    [{ 'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'tools/call', 'Mcp-Name': 'read_file' }, /Mcp-Name 'read_file' disagrees/],
    [{ 'Mcp-Method': 'tools/call', 'Mcp-Name': 'run_command' }, /MCP-Protocol-Version header is missing/],
  ];
  for (const [headers, message] of cases) {
    const { status, body } = await rawPost('tools/call', { name: 'run_command', arguments: { command: 'true' } }, { headers });
    assert.equal(status, 400, JSON.stringify(headers));
    assert.equal(body.error.code, -32020, JSON.stringify(headers));
    assert.match(body.error.message, message);
  }
});

// The Tasks extension (SEP-2663). @modelcontextprotocol/client 2.4.0 has no Tasks API for
// 2026-07-28, so these speak the extension's JSON-RPC themselves, with its headers.
const withTasks = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                    'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };

async function pollTask(taskId, until) {
  for (;;) {
    const { status, body } = await rawPost('tasks/get', { taskId }, { meta: withTasks });
    assert.equal(status, 200, JSON.stringify(body));
    assert.equal(body.result.resultType, 'complete');
    if (until(body.result)) return body.result;
    await new Promise((r) => setTimeout(r, body.result.pollIntervalMs));
  }
}

check('MCP-6: Tasks: run_command answers a task at once; tasks/get polls it to its result', async () => {
  const sandbox = await openSandbox(v2);
  const { body } = await rawPost('tools/call', { name: 'run_command', arguments: { sandbox, command: 'sleep 1; echo done' } },
                                 { meta: withTasks });
  assert.equal(body.result.resultType, 'task', JSON.stringify(body));
  assert.equal(body.result.status, 'working');
  assert.match(body.result.taskId, /^task-[0-9a-f]{32}$/);
  // The POST that started it has ended: the task is the server's, polled by later requests.
  const done = await pollTask(body.result.taskId, (t) => t.status !== 'working');
  assert.equal(done.status, 'completed');
  assert.equal(done.result.structuredContent.stdout, 'done\n');
  assert.equal(done.result.content[0]._meta['maf-sandbox/labels'].integrity, 'untrusted');
  // The handle was released at the task's end: a synchronous call in it runs.
  const r = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'echo after' } });
  assert.equal(r.isError, false, text(r));
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
});

check('MCP-6: Tasks: tasks/cancel stops the program and the task ends cancelled, without a result', async () => {
  const { body } = await rawPost('tools/call', { name: 'run_command', arguments: { command: 'sleep 300' } },
                                 { meta: withTasks });
  assert.equal(body.result.resultType, 'task');
  const taskId = body.result.taskId;
  const ack = await rawPost('tasks/cancel', { taskId }, { meta: withTasks });
  assert.equal(ack.status, 200);
  assert.equal(ack.body.result.resultType, 'complete');
  const ended = await pollTask(taskId, (t) => t.status !== 'working');
  assert.equal(ended.status, 'cancelled');
  assert.equal(ended.result, undefined);
});

/// Host processes whose command line holds `marker` (a guest's processes are the host's on
/// the process backend): how "nothing of it runs any more" is checked without a clock.
function processesWith(marker) {
  return readdirSync('/proc').filter((p) => /^[0-9]+$/.test(p)).filter((p) => {
    try {
      return readFileSync(`/proc/${p}/cmdline`, 'latin1').includes(marker);
    } catch {
      return false;
    }
  });
}

check('MCP-9: Tasks: a running task shows its output so far in tasks/get (statusMessage and _meta)', async () => {
  const sandbox = await openSandbox(v2);
  // The program cannot finish before the client has seen `first-line`: it waits for a file the
  // client writes only then. Output held until exit never lets it finish (no clock involved).
  const command = 'echo first-line; echo on-stderr >&2; while [ ! -e go.txt ]; do sleep 0.1; done; echo finished';
  const { body } = await rawPost('tools/call', { name: 'run_command', arguments: { sandbox, command } }, { meta: withTasks });
  assert.equal(body.result.resultType, 'task', JSON.stringify(body));
  const seen = await pollTask(body.result.taskId, (t) => t.status !== 'working' || /first-line/.test(t.statusMessage ?? ''));
  assert.equal(seen.status, 'working', 'the task ended before its output was seen');
  assert.match(seen.statusMessage, /output so far \(untrusted guest output/);
  const so_far = seen._meta['dev.maf-sandbox/output'];
  assert.equal(so_far.stdout, 'first-line\n');
  assert.equal(so_far.untrusted, true);
  const wrote = await v2.callTool({ name: 'write_file', arguments: { sandbox, path: 'go.txt', content: 'go' } });
  assert.equal(wrote.isError, false, text(wrote));
  const done = await pollTask(body.result.taskId, (t) => t.status !== 'working');
  assert.equal(done.status, 'completed');
  assert.equal(done.result.structuredContent.stdout, 'first-line\nfinished\n');
  assert.equal(done.result.structuredContent.stderr, 'on-stderr\n');
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
});

check('MCP-6 AGENT-7: Tasks: tasks/cancel in a handle ends the program, not the sandbox: nothing of it runs on, its later '
      + 'file never appears, and the handle still answers', async () => {
  const sandbox = await openSandbox(v2);
  const marker = `283.${process.pid}7`;
  const command = `touch kept.txt; echo started; sleep ${marker}; echo late > late.txt`;
  const { body } = await rawPost('tools/call', { name: 'run_command', arguments: { sandbox, command } }, { meta: withTasks });
  assert.equal(body.result.resultType, 'task', JSON.stringify(body));
  const taskId = body.result.taskId;
  const running = await pollTask(taskId, (t) => t.status !== 'working' || /started/.test(t.statusMessage ?? ''));
  assert.equal(running.status, 'working');
  assert.ok(processesWith(marker).length > 0, 'the sleeper is visible on the host while the task runs');
  await rawPost('tasks/cancel', { taskId }, { meta: withTasks });
  const ended = await pollTask(taskId, (t) => t.status !== 'working');
  assert.equal(ended.status, 'cancelled');
  // A stop may land asynchronously: bounded, until the sleeper is gone (the old tool layer left
  // it running for its 283 s, and it would then write late.txt).
  for (let i = 0; i < 100 && processesWith(marker).length > 0; ++i) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(processesWith(marker), []);
  // Nothing runs, so late.txt is absent now or never; the handle's sandbox is the same one.
  const late = await v2.callTool({ name: 'read_file', arguments: { sandbox, path: 'late.txt' } });
  assert.equal(late.isError, true, text(late));
  const kept = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'test -e kept.txt && echo same' } });
  assert.equal(kept.isError, false, text(kept));
  assert.equal(kept.structuredContent.stdout, 'same\n');
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
});

check('MCP-10 AGENT-7: the v2 client aborting a stateless call closes its POST, which cancels it: the program ends, '
      + 'the handle keeps its sandbox', async () => {
  const sandbox = await openSandbox(v2);
  const marker = `283.${process.pid}10`;
  const controller = new AbortController();
  const call = v2.callTool({ name: 'run_command',
                             arguments: { sandbox, command: `touch kept.txt; sleep ${marker}; echo late > late.txt` } },
                           { signal: controller.signal });
  const settled = call.then(() => 'answered', () => 'rejected');
  // Bounded, until the sleeper runs (a bound on its start, not a measurement).
  for (let i = 0; i < 300 && processesWith(marker).length === 0; ++i) await new Promise((r) => setTimeout(r, 100));
  assert.ok(processesWith(marker).length > 0, 'the sleeper never started');
  controller.abort();
  assert.equal(await settled, 'rejected');
  for (let i = 0; i < 100 && processesWith(marker).length > 0; ++i) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(processesWith(marker), [], 'the closed POST left its program running');
  const late = await v2.callTool({ name: 'read_file', arguments: { sandbox, path: 'late.txt' } });
  assert.equal(late.isError, true, text(late));
  const kept = await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'test -e kept.txt && echo same' } });
  assert.equal(kept.structuredContent.stdout, 'same\n', text(kept));
  // A notifications/cancelled POST of a stateless client reaches no call (MCP-10): accepted.
  const note = await fetch(http.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream',
               'MCP-Protocol-Version': '2026-07-28', 'Mcp-Method': 'notifications/cancelled' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled',
                           params: { requestId: 1, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28',
                                                            'io.modelcontextprotocol/clientCapabilities': {} } } }),
  });
  assert.equal(note.status, 202);
  await v2.callTool({ name: 'close_sandbox', arguments: { sandbox } });
});

check('MCP-6: Tasks: without the extension the call stays synchronous; an unknown task is -32602', async () => {
  const { body } = await rawPost('tools/call', { name: 'run_command', arguments: { command: 'echo sync' } });
  assert.equal(body.result.resultType, 'complete');
  assert.equal(body.result.structuredContent.stdout, 'sync\n');
  const unknown = await rawPost('tasks/get', { taskId: 'task-00000000000000000000000000000000' }, { meta: withTasks });
  assert.equal(unknown.body.error.code, -32602);
  assert.match(unknown.body.error.message, /no task/);
});

check('MCP-6: server/discover declares the Tasks extension', async () => {
  const { body } = await rawPost('server/discover', {});
  assert.deepEqual(body.result.capabilities.extensions, { 'io.modelcontextprotocol/tasks': {} });
});

check('MCP-7: no guest output is ever a log message: it is in the result only, labelled untrusted', async () => {
  const server = spawn(cli, serverArgs('quiet'), { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines = [];
  let buffered = '';
  const answered = new Promise((resolve) => {
    server.stdout.on('data', (d) => {
      buffered += d;
      for (let nl; (nl = buffered.indexOf('\n')) >= 0; buffered = buffered.slice(nl + 1)) {
        const message = JSON.parse(buffered.slice(0, nl));
        lines.push(message);
        if (message.id === 1) resolve(message);
      }
    });
  });
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {},
                 progressToken: 'p' };
  server.stdin.write(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: {
    name: 'run_command', arguments: { command: 'echo GUEST-LINE-1; sleep 2; echo GUEST-LINE-2 >&2' }, _meta: meta } }) + '\n');
  const answer = await answered;
  server.stdin.end();
  await new Promise((r) => server.once('exit', r));
  assert.match(answer.result.structuredContent.stdout, /GUEST-LINE-1/);
  assert.equal(answer.result.content[0]._meta['maf-sandbox/labels'].integrity, 'untrusted');
  const others = lines.filter((m) => m.id !== 1);
  assert.ok(others.some((m) => m.method === 'notifications/progress'), 'progress was reported while it ran');
  for (const m of others) {
    assert.notEqual(m.method, 'notifications/message');
    assert.doesNotMatch(JSON.stringify(m), /GUEST-LINE/);
  }
});

check('MCP-8: without --spec the server serves run\'s minimal spec (kind cli) to the v2 client', async () => {
  const args = ['mcp', '--backend', backend, '--config', configFile, '--min-isolation', 'none', '--scope', scope,
                '--thread', 'nospec'];
  const client = new ClientV2({ name: 'eras-nospec', version: '1.0.0' }, pinned);
  await client.connect(new StdioV2({ command: cli, args, stderr: 'pipe' }));
  try {
    assert.match(client.getInstructions() ?? '', /workload kind 'cli'/);
    const r = await client.callTool({ name: 'run_command', arguments: { command: 'echo first run' } });
    assert.equal(r.isError, false, text(r));
    assert.equal(r.structuredContent.stdout, 'first run\n');
  } finally {
    await client.close();
  }
  const help = spawnSync(cli, ['--help'], { encoding: 'utf8' });
  assert.match(help.stdout + help.stderr, /kind `cli` requiring exec, files_in and files_out, as `run`/);
});

check('MCP-5: the v2 client over stdio, and nothing left after a kill and dispose-scope', async () => {
  const transport = new StdioV2({ command: cli, args: serverArgs('killed'), stderr: 'pipe' });
  const client = new ClientV2({ name: 'eras-stdio', version: '1.0.0' }, pinned);
  await client.connect(transport);
  assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
  const a = await openSandbox(client);
  const b = await openSandbox(client, { spec: 'eras-other' });
  for (const sandbox of [a, b]) {
    const r = await client.callTool({ name: 'run_command', arguments: { sandbox, command: 'echo open > here.txt' } });
    assert.equal(r.isError, false, text(r));
  }
  assert.equal(engine.leftovers('killed').length, 2, 'two handles, two sandboxes');
  process.kill(transport.pid, 'SIGKILL');
  await client.close().catch(() => {});
  assert.equal(engine.leftovers('killed').length, 2, 'a killed server disposes nothing');
  const purge = spawnSync(cli, ['dispose-scope', '--backend', backend, '--config', configFile, '--scope', scope,
                                '--thread', 'killed', '--json'], { encoding: 'utf8' });
  assert.equal(purge.status, 0, purge.stderr);
  assert.equal(JSON.parse(purge.stdout).disposed, 2);
  assert.deepEqual(engine.leftovers('killed'), []);
});

check('MCP-5: the server exits with handles open and disposes them', async () => {
  const sandbox = await openSandbox(v2);
  await v2.callTool({ name: 'run_command', arguments: { sandbox, command: 'true' } });
  assert.ok(engine.leftovers('shared').length >= 1);
  http.server.kill('SIGTERM');
  await new Promise((r) => http.server.once('exit', r));
  assert.deepEqual(engine.leftovers('shared'), []);
});
