// `maf-sandbox mcp --http`'s own guards (docs/mcp.md; issue 50 item 5): the server has no
// authentication, so it listens on loopback only and answers 403 to a request whose Host is
// not a loopback name (DNS rebinding) or whose Origin is not a loopback origin (a browser page
// elsewhere). Each check is a function shown able to fail: it is also run against a
// deliberately broken server (`permissiveServer`, a plain Node server that answers 200 to
// anything), where it must throw.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startHttpServer } from './http_server.mjs';

const cli = process.env.MAF_SANDBOX_CLI;
const scratch = mkdtempSync(join(tmpdir(), 'maf-mcp-http-'));
chmodSync(scratch, 0o711);
const specFile = join(scratch, 'spec.json');
writeFileSync(specFile, JSON.stringify({ kind: 'mcp-http', requires: ['exec', 'files_in'] }));
const configFile = join(scratch, 'config.json');
writeFileSync(configFile, JSON.stringify({ root: join(scratch, 'root') }));

function serverArgs(listen) {
  return ['mcp', '--backend', 'process', '--config', configFile, '--spec', specFile, '--min-isolation', 'none',
          '--scope', `mcp-http-${process.pid}`, '--http', listen];
}

const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '0' } } });

/// POST `body` to `url` with exactly these Host and Origin headers (fetch cannot set Host).
function post(url, { host, origin }) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const headers = { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    if (origin) headers.origin = origin;
    const req = request({ hostname: u.hostname, port: u.port, path: u.pathname, method: 'POST', headers }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(initialize);
  });
}

// The checks, each on a server at `url`.
async function refusesForeignOrigin(url) {
  const port = new URL(url).port;
  const r = await post(url, { host: `127.0.0.1:${port}`, origin: 'http://attacker.example' });
  assert.equal(r.status, 403, `a non-loopback Origin was answered ${r.status}: ${r.text}`);
  assert.match(r.text, /Origin is not a loopback origin/);
}
async function refusesForeignHost(url) {
  const r = await post(url, { host: 'attacker.example', origin: undefined });
  assert.equal(r.status, 403, `a non-loopback Host was answered ${r.status}: ${r.text}`);
  assert.match(r.text, /Host header is not a loopback name/);
}
async function servesLoopback(url) {
  const port = new URL(url).port;
  const r = await post(url, { host: `localhost:${port}`, origin: `http://localhost:${port}` });
  assert.equal(r.status, 200, `a loopback Host and Origin were answered ${r.status}: ${r.text}`);
}

let server;
let url;
let stderr;

before(async () => {
  ({ server, url, stderr } = await startHttpServer(cli, serverArgs('127.0.0.1:0')));
});

after(async () => {
  const exited = new Promise((resolve) => server.once('exit', (code) => resolve(code)));
  server.kill('SIGTERM');
  assert.equal(await exited, 0, stderr.join(''));
});

test('issue 50: a request whose Origin is not a loopback origin is refused with 403', async () => {
  await refusesForeignOrigin(url);
  await servesLoopback(url);  // the control: the same request from a loopback origin is served
});

test('issue 50: a request whose Host is not a loopback name (DNS rebinding) is refused with 403', async () => {
  await refusesForeignHost(url);
});

test('issue 50: --http on a non-loopback address (0.0.0.0) is refused before anything listens', async () => {
  const child = spawn(cli, serverArgs('0.0.0.0:0'), { stdio: ['ignore', 'ignore', 'pipe'] });
  let text = '';
  child.stderr.on('data', (d) => { text += d; });
  const code = await new Promise((resolve) => child.once('exit', (c) => resolve(c)));
  assert.notEqual(code, 0, `the server accepted --http 0.0.0.0: ${text}`);
  assert.match(text, /not a loopback address/);
  assert.doesNotMatch(text, /listening on/);
});

test('issue 50: each check fails against a deliberately broken server that answers every request', async () => {
  const permissiveServer = createServer((req, res) => { req.resume(); res.end('{}'); });
  await new Promise((resolve) => permissiveServer.listen(0, '127.0.0.1', resolve));
  const broken = `http://127.0.0.1:${permissiveServer.address().port}/mcp`;
  try {
    await assert.rejects(refusesForeignOrigin(broken), assert.AssertionError);
    await assert.rejects(refusesForeignHost(broken), assert.AssertionError);
    await servesLoopback(broken);
  } finally {
    permissiveServer.close();
  }
});
