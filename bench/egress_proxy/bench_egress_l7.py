#!/usr/bin/env python3
"""Terminated (method/path rule) vs opaque (host allowed whole) through maf-sandbox-egress-proxy
(issue 45 item 8). Everything runs on this machine: a local HTTPS upstream with a throwaway
test CA (backends/egress-proxy/tests/tls_upstream.py), the proxy binary given on the command
line, and this script as the client (Python's http.client + ssl over Debian's OpenSSL), the
same client code on both paths so the ratios compare the proxy's two modes.

Usage: bench_egress_l7.py PROXY_BINARY [ROUNDS]. Prints a Markdown table of figures and
ratios. Figures from one run only; a loaded machine shifts all of them alike.
"""
import http.client, json, os, socket, ssl, statistics, subprocess, sys, tempfile, time

proxy_bin = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
here = os.path.dirname(os.path.abspath(__file__))
upstream_py = os.path.join(here, "..", "..", "backends", "egress-proxy", "tests", "tls_upstream.py")
work = tempfile.mkdtemp(prefix="maf-bench-l7-")
os.chdir(work)


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


sh("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -days 1 "
   "-subj /CN=bench-ca -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign")
sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=rule.test")
open("ext", "w").write("subjectAltName=DNS:rule.test,DNS:whole.test\nextendedKeyUsage=serverAuth\n")
sh("openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 1 -extfile ext")
os.makedirs("www/repo", exist_ok=True)
open("www/repo/1k", "wb").write(b"x" * 1024)
with open("www/repo/64m", "wb") as f:
    f.write(os.urandom(1 << 20) * 64)

up_port, proxy_port = free_port(), free_port()
upstream = subprocess.Popen([sys.executable, upstream_py, str(up_port), "www", "up.pem", "up.key"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
upstream.stdout.readline()
import atexit
atexit.register(upstream.terminate)
rules = json.dumps([{"host": "rule.test:%d" % up_port, "methods": ["GET"], "paths": ["/repo/"]}])
proxy = subprocess.Popen([proxy_bin, "--unsafe-allow-forwarding", "--listen", "127.0.0.1:%d" % proxy_port,
                          "--rules", rules, "--upstream-ca", "ca.pem", "--resolve", "rule.test=127.0.0.1",
                          "--resolve", "whole.test=127.0.0.1", "--allow", "whole.test:%d" % up_port,
                          "--max-connections", "256", "--log", "proxy.log"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
atexit.register(proxy.terminate)
# The decision log goes to a file (a line per terminated request), as a backend's goes to
# the engine's log driver: a pipe read by this process would put its reader in the timings.
for _ in range(100):
    if os.path.exists("proxy.log") and "listening" in open("proxy.log").read():
        break
    time.sleep(0.05)
ready = json.loads(open("proxy.log").readline())
open("sandbox-ca.pem", "w").write(ready["ca_certificate"])

ctx_rule = ssl.create_default_context(cafile="sandbox-ca.pem")
ctx_whole = ssl.create_default_context(cafile="ca.pem")


def connect(host):
    c = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=ctx_rule if host == "rule.test" else ctx_whole,
                                    timeout=60)
    c.set_tunnel(host, up_port)
    return c


def get(c, path):
    c.request("GET", path)
    r = c.getresponse()
    n = 0
    while True:
        b = r.read(1 << 16)
        if not b:
            break
        n += len(b)
    assert r.status == 200, r.status
    return n


def rss_kib():
    for line in open("/proc/%d/status" % proxy.pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])


results = {}
for host in ("whole.test", "rule.test"):
    steady, first, throughput = [], [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        c = connect(host)
        get(c, "/repo/1k")
        first.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for _ in range(200):
            get(c, "/repo/1k")
        steady.append((time.perf_counter() - t0) / 200)
        c.close()
    for _ in range(max(1, rounds // 2)):
        c = connect(host)
        t0 = time.perf_counter()
        n = get(c, "/repo/64m")
        throughput.append(n / (time.perf_counter() - t0))
        c.close()
    results[host] = dict(steady=statistics.median(steady), first=statistics.median(first),
                         throughput=statistics.median(throughput))

# Memory: 64 connections held open (each has made one request), proxy RSS before/after.
def hold(host):
    time.sleep(0.3)
    before = rss_kib()
    held = []
    for _ in range(64):
        c = connect(host)
        get(c, "/repo/1k")
        held.append(c)
    grown = rss_kib() - before
    ok = sum(1 for c in held if get(c, "/repo/1k") == 1024)
    for c in held:
        c.close()
    return grown, ok


grown_whole, _ = hold("whole.test")
grown_rule, ok = hold("rule.test")
proxy.terminate(); upstream.terminate()

w, r = results["whole.test"], results["rule.test"]
print("| metric | opaque tunnel | terminated | ratio (terminated / tunnel) | goal |")
print("|---|---|---|---|---|")
print("| 1 KiB GET, established connection | %.0f us | %.0f us | %.2f | <= 1.3 |" %
      (w["steady"] * 1e6, r["steady"] * 1e6, r["steady"] / w["steady"]))
print("| first request (dial, handshake(s), minting on the first) | %.1f ms | %.1f ms | %.2f | <= 2 |" %
      (w["first"] * 1e3, r["first"] * 1e3, r["first"] / w["first"]))
print("| 64 MiB download | %.0f MiB/s | %.0f MiB/s | %.2f | >= 0.8 |" %
      (w["throughput"] / (1 << 20), r["throughput"] / (1 << 20), r["throughput"] / w["throughput"]))
print("| proxy RSS growth, 64 connections held | %d KiB (%.1f KiB each) | %d KiB (%.1f KiB each) | %.2f | <= 64 KiB each beyond OpenSSL's |" %
      (grown_whole, grown_whole / 64.0, grown_rule, grown_rule / 64.0, grown_rule / max(1, grown_whole)))
print("| 64 concurrent terminated connections, each answering a second request | | %d / 64 | | 64 |" % ok)
