// `maf-sandbox mcp` driven by the official MCP TypeScript SDK client over stdio (issue 30):
// the lifecycle, every tool, a bad call, an unknown tool, a cancelled call and a closed stdin —
// on the backend MCP_TEST_BACKEND names (process by default; docker in the engine stage).
// Nothing here stands in for the client: requests and answers are the SDK's own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync, existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError, ErrorCode } from '@modelcontextprotocol/sdk/types.js';

const cli = process.env.MAF_SANDBOX_CLI;
assert.ok(cli && existsSync(cli), 'MAF_SANDBOX_CLI must name the built maf-sandbox');
const backend = process.env.MCP_TEST_BACKEND ?? 'process';
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-test-'));
// A root host runs guests as an unprivileged uid that must be able to reach the backend's root.
chmodSync(scratch, 0o711);
const scope = `mcp-test-${process.pid}`;

// The backend's configuration and a way to ask it what is left of a conversation.
const engine = {
  process: {
    config: { root: join(scratch, 'process-root') },
    image: undefined,
    // Every sandbox is a directory <root>/<conversation>/<sandbox> whose meta.json names its
    // key (docs/backends/process.md "State layout").
    leftovers: (thread) => {
      const root = join(scratch, 'process-root');
      if (!existsSync(root)) return [];
      const sandboxes = readdirSync(root, { withFileTypes: true })
        .filter((c) => c.isDirectory())
        .flatMap((c) => readdirSync(join(root, c.name)).map((d) => join(c.name, d)));
      return sandboxes.filter((d) => {
        try {
          const meta = JSON.parse(readFileSync(join(root, d, 'meta.json'), 'utf8'));
          return meta.scope === scope && meta.thread_id === thread;
        } catch {
          return false;  // a sandbox being made or removed has no complete meta.json
        }
      });
    },
  },
  docker: {
    config: { transport: process.env.MCP_TEST_DOCKER_TRANSPORT ?? 'auto' },
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
writeFileSync(
  specFile,
  JSON.stringify({
    kind: 'mcp-test',
    requires: ['exec', 'files_in', 'files_out'],
    declared_outputs: [{ path: 'report.txt' }],
    ...(engine.image ? { image: engine.image } : {}),
  }),
);
const outDir = join(scratch, 'out');

function serverArgs(cleanup, thread) {
  return ['mcp', '--backend', backend, '--config', configFile, '--spec', specFile, '--min-isolation', 'none',
          '--cleanup', cleanup, '--out', outDir, '--scope', scope, '--thread', thread];
}

async function connect(cleanup, thread) {
  const transport = new StdioClientTransport({ command: cli, args: serverArgs(cleanup, thread), stderr: 'pipe' });
  const stderr = [];
  transport.stderr?.on('data', (d) => stderr.push(d.toString()));
  const client = new Client({ name: 'maf-sandbox-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, stderr };
}

async function waitFor(predicate, what, seconds = 20) {
  for (let i = 0; i < seconds * 10; i++) {
    if (predicate()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`gave up waiting for ${what}`);
}

function text(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

let session;
before(async () => {
  session = await connect('reclaim', 'kept');
});
after(async () => {
  await session?.client.close();
});

test('issue 30: initialize negotiates 2025-11-25 and names the server', async () => {
  assert.equal(session.client.getServerVersion().name, 'maf-sandbox');
  assert.ok(session.client.getServerCapabilities().tools, 'the server offers tools');
  assert.match(session.client.getInstructions() ?? '', new RegExp(`backend '${backend}'`));
});

test('issue 30: tools/list gives every tool a JSON Schema and says which are read-only', async () => {
  const { tools } = await session.client.listTools();
  const names = tools.map((t) => t.name).sort();
  // open_sandbox and close_sandbox: the handle tools (issue 51, docs/mcp.md "Sandbox handles").
  assert.deepEqual(names, ['close_sandbox', 'collect_outputs', 'open_sandbox', 'read_file', 'run_command', 'write_file']);
  const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
  assert.equal(byName.read_file.annotations.readOnlyHint, true);
  assert.equal(byName.run_command.annotations.readOnlyHint, false);
  assert.equal(byName.write_file.inputSchema.type, 'object');
  assert.deepEqual(byName.write_file.inputSchema.required, ['path', 'content']);
});

test('issue 30: run_command runs in the sandbox and answers exit code, stdout and stderr', async () => {
  const r = await session.client.callTool({ name: 'run_command', arguments: { command: 'echo out; echo err >&2; exit 3' } });
  assert.equal(r.isError, true, 'a non-zero exit is an error result');
  assert.equal(r.structuredContent.exit_code, 3);
  assert.equal(r.structuredContent.stdout, 'out\n');
  assert.equal(r.structuredContent.stderr, 'err\n');
  assert.equal(r.content[0]._meta['maf-sandbox/labels'].integrity, 'untrusted');
  const argv = await session.client.callTool({ name: 'run_command', arguments: { argv: ['echo', 'a b; c'] } });
  assert.equal(argv.isError, false);
  assert.equal(argv.structuredContent.stdout, 'a b; c\n', 'an argv reaches the program literally');
});

test('issue 30: write_file then read_file in a later call (cleanup reclaim keeps the sandbox)', async () => {
  const w = await session.client.callTool({ name: 'write_file', arguments: { path: 'notes/a.txt', content: 'hello\n' } });
  assert.equal(w.isError, false, text(w));
  const r = await session.client.callTool({ name: 'read_file', arguments: { path: 'notes/a.txt' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(text(r), 'hello\n');
  const missing = await session.client.callTool({ name: 'read_file', arguments: { path: 'nope.txt' } });
  assert.equal(missing.isError, true);
  assert.match(text(missing), /nope\.txt/);
  const escape = await session.client.callTool({ name: 'read_file', arguments: { path: '../../etc/passwd' } });
  assert.equal(escape.isError, true, 'a path outside the work directory is refused');
});

test('issue 30: collect_outputs lands the declared output in --out and links it', async () => {
  const w = await session.client.callTool({ name: 'run_command', arguments: { command: 'echo 42 > report.txt' } });
  assert.equal(w.isError, false, text(w));
  const r = await session.client.callTool({ name: 'collect_outputs', arguments: {} });
  assert.equal(r.isError, false, text(r));
  const link = r.content.find((c) => c.type === 'resource_link');
  assert.ok(link, JSON.stringify(r.content));
  assert.equal(link.name, 'report.txt');
  const landed = fileURLToPath(link.uri);
  assert.ok(landed.startsWith(outDir), `${landed} is under --out`);
  assert.equal(readFileSync(landed, 'utf8'), '42\n');
});

test('issue 30: arguments that fail the schema are an isError result naming the field, and nothing runs', async () => {
  const r = await session.client.callTool({ name: 'write_file', arguments: { path: 'x.txt' } });
  assert.equal(r.isError, true);
  assert.match(text(r), /content/);
  const wrongType = await session.client.callTool({ name: 'run_command', arguments: { command: 'true', timeout_seconds: 'soon' } });
  assert.equal(wrongType.isError, true);
  assert.match(text(wrongType), /timeout_seconds/);
  const exists = await session.client.callTool({ name: 'read_file', arguments: { path: 'x.txt' } });
  assert.equal(exists.isError, true, 'the refused write wrote nothing');
});

test('issue 30: an unknown tool is JSON-RPC error -32602', async () => {
  await assert.rejects(
    session.client.callTool({ name: 'no_such_tool', arguments: {} }),
    (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams && /no_such_tool/.test(e.message),
  );
});

test('issue 30: a cancelled long call returns at once and its sandbox is still cleaned (dispose)', async () => {
  const thread = 'cancelled';
  const s = await connect('dispose', thread);
  try {
    const controller = new AbortController();
    const call = s.client.callTool({ name: 'run_command', arguments: { command: 'sleep 30', timeout_seconds: 60 } },
                                   undefined, { signal: controller.signal });
    // The call has acquired its sandbox once something of the conversation exists.
    await waitFor(() => engine.leftovers(thread).length > 0, 'the call to acquire its sandbox');
    controller.abort('the user changed their mind');
    await assert.rejects(call);
    await waitFor(() => engine.leftovers(thread).length === 0, 'the cancelled call to dispose its sandbox');
    // The server goes on serving.
    const r = await s.client.callTool({ name: 'run_command', arguments: { command: 'echo still here' } });
    assert.equal(r.structuredContent.stdout, 'still here\n');
  } finally {
    await s.client.close();
  }
});

test('issue 30: closing stdin disposes everything the session acquired', async () => {
  const thread = 'closing';
  const s = await connect('reclaim', thread);
  const r = await s.client.callTool({ name: 'write_file', arguments: { path: 'left.txt', content: 'x' } });
  assert.equal(r.isError, false, text(r));
  assert.ok(engine.leftovers(thread).length > 0, 'reclaim keeps the sandbox while the session lives');
  const exited = new Promise((resolve) => s.transport._process.once('exit', (code, signal) => resolve({ code, signal })));
  await s.client.close();
  const { code, signal } = await exited;
  assert.equal(signal, null, `the server exited by itself (${s.stderr.join('')})`);
  assert.equal(code, 0);
  assert.deepEqual(engine.leftovers(thread), []);
  assert.match(s.stderr.join(''), /disposed 1 sandbox/);
});

test('issue 30: a spec the backend cannot serve is refused before initialize is answered, naming why', async () => {
  const refused = join(scratch, 'refused.json');
  // A credential (issue 46): the process backend brokers them since issue 47, but no router
  // permits one without --max-identity-scope (CRED-5), so every backend refuses this spec.
  writeFileSync(refused, JSON.stringify({
    kind: 'wants-attached-identity', requires: ['exec'], egress: 'allowlist', egress_allow: ['example.com'],
    attached_identity: [{ name: 'api', hosts: ['example.com'] }],
  }));
  const r = spawnSync(cli, ['mcp', '--backend', backend, '--config', configFile, '--spec', refused, '--min-isolation', 'none'],
                      { input: '', encoding: 'utf8' });
  assert.equal(r.status, 3, r.stderr);
  assert.equal(r.stdout, '', 'nothing reaches the protocol stream');
  assert.match(r.stderr, /attached_identity|credential 'api'/);
});
