#!/usr/bin/env python3
"""Test helper for the proxy's control channel (control.hpp): the host's side of it.

  control_client.py decide ADDR SCRIPT_JSON LOG   attach as the decider; answer each ask by the
      host name from SCRIPT_JSON ({"host": ["allow-once"|"allow-sandbox"|"deny"|"silent", reason]}),
      append each ask to LOG; runs until killed.
  control_client.py hold ADDR HOST PORT PROXY_PORT OUT   open a CONNECT tunnel through the proxy,
      write "open" to OUT, then wait for it to close and write "closed" (or "still-open" after 20 s).
"""
import json, socket, sys, time


def connect(addr):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + addr[1:] if addr.startswith("@") else addr)
    return s


def decide(addr, script, log):
    table = json.loads(script)
    s = connect(addr)
    s.sendall(b'{"op":"decide"}\n')
    f = s.makefile("rb")
    print(f.readline().decode().strip(), flush=True)
    for line in f:
        ask = json.loads(line)
        with open(log, "a") as out:
            out.write(json.dumps(ask) + "\n")
        verdict, reason = table.get(ask["host"], ["deny", "unknown host"])
        if verdict == "silent":
            continue
        s.sendall((json.dumps({"op": "answer", "ask": ask["ask"], "verdict": verdict, "reason": reason}) + "\n").encode())


def hold(host, port, proxy_port, out):
    s = socket.create_connection(("127.0.0.1", int(proxy_port)))
    s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = s.recv(4096)
    if b" 200 " not in head.split(b"\r\n")[0] + b" ":
        open(out, "w").write("refused " + head.decode(errors="replace"))
        return
    open(out, "w").write("open\n")
    s.settimeout(20)
    try:
        data = s.recv(1)
        state = "closed" if not data else "data"
    except socket.timeout:
        state = "still-open"
    except OSError:
        state = "closed"
    open(out, "a").write(state + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "decide":
        decide(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        hold(sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6])
