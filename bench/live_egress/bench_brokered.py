#!/usr/bin/env python3
"""A brokered request beside the same request to a terminated host without a credential
(issue 46 item 8; bench/RESULTS.md "Live egress and brokering"). All local: an HTTPS upstream
with a throwaway CA (backends/egress-proxy/tests/tls_upstream.py), one proxy whose credential
`tok` is bound to cred.test, plain.test allowed beside it (a credentialed proxy terminates
every allowed host, CRED-8, so both legs are terminated alike), and this script as the client
on both paths: cred.test gets `Authorization: Bearer <placeholder>` (swapped for the value),
plain.test the same header with a token of the same length (passed as is). The ratio is
brokered / not brokered; rounds alternate the two so a loaded machine shifts both alike.

Usage: bench_brokered.py PROXY_BINARY [ROUNDS]. Prints a Markdown table.
"""
import http.client, json, os, secrets, socket, ssl, statistics, subprocess, sys, tempfile, time, atexit

proxy_bin = os.path.abspath(sys.argv[1])
rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 7
here = os.path.dirname(os.path.abspath(__file__))
upstream_py = os.path.join(here, "..", "..", "backends", "egress-proxy", "tests", "tls_upstream.py")
work = tempfile.mkdtemp(prefix="maf-bench-brokered-")
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
sh("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout up.key -out up.csr -subj /CN=cred.test")
open("ext", "w").write("subjectAltName=DNS:cred.test,DNS:plain.test\nextendedKeyUsage=serverAuth\n")
sh("openssl x509 -req -in up.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out up.pem -days 1 -extfile ext")
os.makedirs("www/repo", exist_ok=True)
open("www/repo/1k", "wb").write(b"x" * 1024)

up_port, proxy_port = free_port(), free_port()
# The upstream logs every header to stderr (tls_upstream.py): to /dev/null, not a pipe.
upstream = subprocess.Popen([sys.executable, upstream_py, str(up_port), "www", "up.pem", "up.key"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
upstream.stdout.readline()
atexit.register(upstream.terminate)
placeholder = "maf-cred-tok-" + secrets.token_hex(16)
value = "v-" + secrets.token_hex(20)
creds = json.dumps([{"name": "tok", "hosts": ["cred.test:%d" % up_port], "header": "Authorization",
                     "format": "Bearer {value}", "placeholder": placeholder}])
proxy = subprocess.Popen([proxy_bin, "--unsafe-allow-forwarding", "--listen", "127.0.0.1:%d" % proxy_port,
                          "--upstream-ca", "ca.pem", "--resolve", "cred.test=127.0.0.1", "--resolve", "plain.test=127.0.0.1",
                          "--allow", "cred.test:%d,plain.test:%d" % (up_port, up_port), "--credentials", creds,
                          "--credential-values", "values.json", "--max-connections", "256", "--log", "proxy.log"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
atexit.register(proxy.terminate)
time.sleep(0.2)
open("values.json", "w").write(json.dumps({"tok": value}))
for _ in range(200):
    if os.path.exists("proxy.log") and "listening" in open("proxy.log").read():
        break
    time.sleep(0.05)
ready = json.loads(open("proxy.log").readline())
open("sandbox-ca.pem", "w").write(ready["ca_certificate"])
ctx = ssl.create_default_context(cafile="sandbox-ca.pem")
other = "maf-cred-xyz-" + secrets.token_hex(16)  # same length as the placeholder: not a placeholder of ours


def connect(host):
    c = http.client.HTTPSConnection("127.0.0.1", proxy_port, context=ctx, timeout=60)
    c.set_tunnel(host, up_port)
    return c


def get(c, token):
    c.request("GET", "/repo/1k", headers={"Authorization": "Bearer " + token})
    r = c.getresponse()
    body = r.read()
    assert r.status == 200 and len(body) == 1024, (r.status, body[:200])


# Request by request, alternating the two hosts (and which goes first), each timed alone: a
# loaded machine's drift then hits both lists alike, and the medians compare like with like.
steady = {"cred.test": [], "plain.test": []}
first = {"cred.test": [], "plain.test": []}
tokens = {"cred.test": placeholder, "plain.test": other}
for r in range(rounds):
    conns = {}
    for host in ("cred.test", "plain.test"):
        t0 = time.perf_counter()
        conns[host] = connect(host)
        get(conns[host], tokens[host])
        first[host].append(time.perf_counter() - t0)
    for i in range(200):
        order = ("cred.test", "plain.test") if i % 2 == 0 else ("plain.test", "cred.test")
        for host in order:
            t0 = time.perf_counter()
            get(conns[host], tokens[host])
            steady[host].append(time.perf_counter() - t0)
    for c in conns.values():
        c.close()
proxy.terminate(); upstream.terminate()
log = open("proxy.log").read()
assert value not in log and '"credential":"tok"' in log  # it was brokered, and never logged
b, p = statistics.median(steady["cred.test"]), statistics.median(steady["plain.test"])
bf, pf = statistics.median(first["cred.test"]), statistics.median(first["plain.test"])
print("| metric | not brokered (terminated host) | brokered | ratio | goal |")
print("|---|---|---|---|---|")
print("| 1 KiB GET, established connection (median of %d each) |" % len(steady["cred.test"]) + " %.0f us | %.0f us | %.2f | <= 1.05 |" % (p * 1e6, b * 1e6, b / p))
print("| first request (dial, both handshakes) | %.1f ms | %.1f ms | %.2f | |" % (pf * 1e3, bf * 1e3, bf / pf))
