# A test upstream for test_proxy_tls.sh: HTTPS with the test's own CA, HTTP/1.1 kept alive,
# serving files under ROOT for GET and echoing the byte count of a POST (Content-Length or
# chunked). Usage: tls_upstream.py PORT ROOT CERT KEY [ADDRESS] (default 127.0.0.1)
import http.server, json, ssl, sys, os

cert, key = os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4])
os.chdir(sys.argv[2])


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls between head and body

    def do_POST(self):
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
        out = b"posted %d to %s\n" % (len(body), self.path.encode())
        self.send_response(200)
        self.send_header("content-length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, fmt, *args):
        sys.stderr.write("UPSTREAM %s %s\n" % (self.command, self.path))
        # Every header as received, so a test can see what a brokered credential became.
        sys.stderr.write("UPSTREAM-HEADERS %s\n" % json.dumps(dict(self.headers)))
        sys.stderr.flush()


address = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1"
server = http.server.ThreadingHTTPServer((address, int(sys.argv[1])), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
