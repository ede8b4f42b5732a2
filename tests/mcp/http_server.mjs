// Starting `maf-sandbox mcp --http` for a test: spawned with `args`, resolved with its
// child process, its URL (from the "listening on" line it prints on stderr) and the stderr
// collected so far (kept growing); rejected if it exits first.
import { spawn } from 'node:child_process';

export function startHttpServer(cli, args) {
  const server = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const stderr = [];
  return new Promise((resolve, reject) => {
    server.stderr.on('data', (d) => {
      stderr.push(d.toString());
      const m = stderr.join('').match(/listening on (http:\/\/\S+\/mcp)/);
      if (m) resolve({ server, url: m[1], stderr });
    });
    server.once('exit', (code) => reject(new Error(`the server exited (${code}): ${stderr.join('')}`)));
  });
}
