// `maf-sandbox mcp --backend process` with an ALLOWLIST spec (issue 47 item 5), driven by the
// official MCP TypeScript SDK client over stdio: the allowed host (an HTTP server this test
// starts on the host's loopback, named by a proxy pin) is reached through the per-sandbox
// proxy, another is refused with 403, and the proxy is gone once the session ends. Also the
// credential opt-in (issue 46/47, docs/cli.md "Credentials"): a spec naming a credential is
// refused at start by default and served with --max-identity-scope and --credential.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const cli = process.env.MAF_SANDBOX_CLI;
assert.ok(cli && existsSync(cli), 'MAF_SANDBOX_CLI must name the built maf-sandbox');
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-egress-'));
chmodSync(scratch, 0o711);  // a root host's guests run as an unprivileged uid that must reach the root
const scope = `mcp-egress-${process.pid}`;

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function httpServer(dir) {
  const port = await freePort();
  const child = spawn('python3', ['-m', 'http.server', String(port), '--bind', '127.0.0.1', '--directory', dir],
                      { stdio: 'ignore' });
  for (let i = 0; i < 100; i++) {
    const r = spawnSync('python3', ['-c', `import socket; socket.create_connection(("127.0.0.1", ${port}), 1)`]);
    if (r.status === 0) return { port, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGKILL');
  assert.fail(`the loopback HTTP server on ${port} did not start`);
}

/// Running egress proxies whose `--allow` is `entry`.
function proxiesAllowing(entry) {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!argv[0]?.includes('maf-sandbox-egress-proxy')) continue;
    for (let i = 0; i + 1 < argv.length; i++) if (argv[i] === '--allow' && argv[i + 1] === entry) n++;
  }
  return n;
}

function text(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

let allowed, other, configFile, specFile, credSpecFile;
before(async () => {
  const www = join(scratch, 'www');
  mkdirSync(www);
  writeFileSync(join(www, 'index.html'), 'fetched-through-the-proxy\n');
  allowed = await httpServer(www);
  other = await httpServer(www);
  configFile = join(scratch, 'config.json');
  writeFileSync(configFile, JSON.stringify({
    root: join(scratch, 'process-root'),
    egress_proxy_args: ['--resolve', 'allowed.test=127.0.0.1', '--resolve', 'other.test=127.0.0.1'],
  }));
  specFile = join(scratch, 'spec.json');
  writeFileSync(specFile, JSON.stringify({
    kind: 'mcp-egress', egress: 'allowlist', egress_allow: [`allowed.test:${allowed.port}`], requires: ['exec'],
  }));
  credSpecFile = join(scratch, 'cred.json');
  writeFileSync(credSpecFile, JSON.stringify({
    kind: 'mcp-cred', egress: 'allowlist', egress_allow: [`allowed.test:${allowed.port}`], requires: ['exec'],
    attached_identity: [{ name: 'api', hosts: [`allowed.test:${allowed.port}`], env: 'API_TOKEN' }],
  }));
});
after(() => {
  allowed?.child.kill('SIGKILL');
  other?.child.kill('SIGKILL');
  rmSync(scratch, { recursive: true, force: true });
});

async function connect(spec, extra = [], env = {}) {
  const args = ['mcp', '--backend', 'process', '--config', configFile, '--spec', spec, '--min-isolation', 'none',
                '--cleanup', 'reclaim', '--scope', scope, '--thread', `t-${Math.random().toString(16).slice(2)}`,
                ...extra];
  const transport = new StdioClientTransport({ command: cli, args, stderr: 'pipe', env: { ...process.env, ...env } });
  const client = new Client({ name: 'maf-sandbox-egress-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

test('issue 47 PE-1 PE-4: an ALLOWLIST spec over MCP reaches the allowed host, is refused another, and leaves no proxy',
     async () => {
  const client = await connect(specFile);
  const ok = await client.callTool({ name: 'run_command',
                                     arguments: { command: `curl -sS http://allowed.test:${allowed.port}/` } });
  assert.match(text(ok), /fetched-through-the-proxy/);
  const no = await client.callTool({
    name: 'run_command',
    arguments: { command: `curl -sS -o /dev/null -w 'status=%{http_code}' http://other.test:${other.port}/` },
  });
  assert.match(text(no), /status=403/);
  assert.doesNotMatch(text(no), /fetched-through-the-proxy/);
  // The same host on another port is off the list too.
  const port = await client.callTool({
    name: 'run_command',
    arguments: { command: `curl -sS -o /dev/null -w 'status=%{http_code}' http://allowed.test:${other.port}/` },
  });
  assert.match(text(port), /status=403/);
  assert.equal(proxiesAllowing(`allowed.test:${allowed.port}`), 1, 'one proxy serves the session\'s sandbox');
  await client.close();
  // The session's conversation is disposed when the client goes, its proxy with it.
  for (let i = 0; i < 100 && proxiesAllowing(`allowed.test:${allowed.port}`) > 0; i++)
    await new Promise((r) => setTimeout(r, 100));
  assert.equal(proxiesAllowing(`allowed.test:${allowed.port}`), 0, 'the proxy outlived the MCP session');
});

test('issue 46/47 CRED-5 CRED-10: a credentialed spec is refused at start by default; served with the opt-in, the ' +
     'guest holds a placeholder and never the value', async () => {
  const refused = spawnSync(cli, ['mcp', '--backend', 'process', '--config', configFile, '--spec', credSpecFile,
                                  '--min-isolation', 'none', '--scope', scope], { encoding: 'utf8', input: '' });
  assert.equal(refused.status, 3, refused.stderr);
  assert.match(refused.stderr, /credential 'api'/);
  const value = `ghs_mcp_${process.pid}_${Date.now()}`;
  const client = await connect(credSpecFile, ['--max-identity-scope', 'sandbox', '--credential', 'api=env:MCP_API_VALUE'],
                               { MCP_API_VALUE: value });
  const r = await client.callTool({ name: 'run_command', arguments: { command: 'echo "token=$API_TOKEN"; env' } });
  assert.match(text(r), /token=maf-cred-api-[0-9a-f]{32}/);
  assert.ok(!text(r).includes(value), 'the value reached the guest');
  await client.close();
});
