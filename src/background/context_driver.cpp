// The guest-side scripts of interpreter contexts (docs/contexts.md): kept apart from the host
// side so each reads as one program.
#include "background/context_driver.hpp"

namespace maf::sandbox::detail {

// Why each piece:
// - SIGINT: a background job of a shell without job control starts with SIGINT ignored, and
//   Python keeps an ignored SIGINT ignored; the host's interrupt (CTX-6) must raise
//   KeyboardInterrupt in the running code, so the default handler is put back.
// - Output is captured at the Python level (sys.stdout/sys.stderr swapped), bounded, and made
//   valid UTF-8 before it is JSON: the host parses strict JSON.
// - The last statement, when an expression, is evaluated apart so its value is returned
//   (the REPL's rule); rich outputs follow the IPython _repr_*_ protocol, then open
//   matplotlib figures, all under a count and a byte cap (a plot bomb is cut, and flagged).
// - The driver sleeps on the `wake` FIFO (opened read-write, so it never sees end of file and
//   a writer never blocks), which each call pokes after its code is in place; it also looks
//   once a second, so a lost poke costs a second, never a hang.
const char* const kPythonContextDriver = R"PY(import ast, base64, io, json, os, select, signal, sys, traceback
signal.signal(signal.SIGINT, signal.default_int_handler)
D = sys.argv[1] if len(sys.argv) > 1 else None  # None: the stream channel (started by kContextBoot)
CAP_TEXT = 1 << 20
CAP_OUTPUTS = 8
CAP_OUTPUT_BYTES = 8 << 20
ns = {"__name__": "__main__", "__builtins__": __builtins__}
sys.argv = [""]

def clean(text):
    return text.encode("utf-8", "replace").decode("utf-8")

def bounded(res, key, text):
    text = clean(text)
    res[key] = text[:CAP_TEXT]
    res[key + "_truncated"] = len(text) > CAP_TEXT

def rich(value, outputs):
    for meth, mime in (("_repr_png_", "image/png"), ("_repr_svg_", "image/svg+xml"),
                       ("_repr_html_", "text/html"), ("_repr_json_", "application/json")):
        f = getattr(type(value), meth, None)
        if not callable(f):
            continue
        try:
            data = f(value)
        except Exception:
            continue
        if data is None:
            continue
        if mime == "application/json" and not isinstance(data, (str, bytes)):
            data = json.dumps(data)
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        outputs.append((mime, bytes(data)))

def figures(outputs):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    for num in plt.get_fignums():
        buf = io.BytesIO()
        plt.figure(num).savefig(buf, format="png")
        outputs.append(("image/png", buf.getvalue()))
    plt.close("all")

def run(code):
    res = {}
    outputs = []
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), ns)
        if last is not None:
            value = eval(compile(last, "<cell>", "eval"), ns)
            if value is not None:
                res["value"] = clean(repr(value))[:CAP_TEXT]
                rich(value, outputs)
        figures(outputs)
    except BaseException as e:
        tb = e.__traceback__.tb_next if e.__traceback__ is not None else None
        res["error"] = {"name": type(e).__name__, "value": clean(str(e)),
                        "traceback": clean("".join(traceback.format_exception(type(e), e, tb)))}
    finally:
        sys.stdout, sys.stderr = saved
    bounded(res, "stdout", out.getvalue())
    bounded(res, "stderr", err.getvalue())
    kept, total = [], 0
    for mime, data in outputs:
        if len(kept) >= CAP_OUTPUTS or total + len(data) > CAP_OUTPUT_BYTES:
            res["outputs_truncated"] = True
            continue
        total += len(data)
        kept.append({"mime": mime, "base64": base64.b64encode(data).decode("ascii")})
    res["outputs"] = kept
    return res

def serve_stream():
    # CTX-11: requests "<timeout ms> <bytes>\n<code>" on the channel's stdin, answers
    # "<bytes>\n<json>" on its stdout; the program's own fds 0-2 are /dev/null from here on, so
    # nothing the code writes below Python's sys.stdout can break a frame.
    pin, pout = os.dup(0), os.dup(1)
    nul = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(nul, fd)
    fired = []
    def alarm(signum, frame):
        fired.append(1)
        raise KeyboardInterrupt("the call's timeout passed")
    while True:
        head = maf_line(pin).split()
        signal.signal(signal.SIGALRM, alarm)  # again: the previous call's code may have replaced it
        code = maf_read(pin, int(head[1])).decode("utf-8", "replace")
        del fired[:]
        try:
            signal.setitimer(signal.ITIMER_REAL, max(int(head[0]), 1) / 1000.0)
            try:
                res = run(code)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except KeyboardInterrupt as e:
            res = {"stdout": "", "stderr": "", "outputs": [],
                   "error": {"name": "KeyboardInterrupt", "value": clean(str(e)), "traceback": ""}}
        if fired:
            res["timed_out"] = True
        data = json.dumps(res).encode("ascii")
        data = b"%d\n" % len(data) + data
        while data:
            data = data[os.write(pout, data):]

if D is None:
    serve_stream()

n = 0
wake = os.open(os.path.join(D, "wake"), os.O_RDWR)
while True:
    try:
        src = os.path.join(D, "%d.py" % n)
        if not os.path.exists(src):
            if select.select([wake], [], [], 1.0)[0]:
                os.read(wake, 4096)
            continue
        with open(src, encoding="utf-8", errors="replace") as f:
            code = f.read()
        os.remove(src)  # taken: a late interrupt never runs it twice
        cur, n = n, n + 1
        res = run(code)
        part = os.path.join(D, "%d.json.part" % cur)
        with open(part, "w", encoding="ascii") as f:
            json.dump(res, f)
        os.replace(part, os.path.join(D, "%d.json" % cur))
    except KeyboardInterrupt:
        continue
)PY";

// The stream channel's first stage (CTX-11): `python3 -u -c BOOT` reads "<bytes>\n<driver>"
// from stdin with unbuffered reads (a buffered reader could swallow the first request with
// it), then runs the driver in this module, where it finds maf_line/maf_read for its frames.
const char* const kContextBoot = R"PY(import os
def maf_read(fd, n):
    b = b""
    while len(b) < n:
        c = os.read(fd, n - len(b))
        if not c:
            raise SystemExit(0)
        b += c
    return b
def maf_line(fd):
    b = b""
    while not b.endswith(b"\n"):
        c = os.read(fd, 1)
        if not c:
            raise SystemExit(0)
        b += c
    return b
exec(compile(maf_read(0, int(maf_line(0))), "<maf-context-driver>", "exec"))
)PY";

const char* const kContextCall = R"SH(d=$1; n=$2; bg=$3; polls=$4
if [ "$5" = send ]; then
  cat > "$d/$n.py.part" && mv "$d/$n.py.part" "$d/$n.py" || exit 90
  printf x 1<>"$d/wake" 2>/dev/null
fi
while [ ! -e "$d/$n.json" ]; do
  if [ -e "$bg/status" ]; then [ -e "$d/$n.json" ] && break; exit 91; fi
  [ "$polls" -gt 0 ] || exit 92
  polls=$((polls - 1)); sleep 0.005 2>/dev/null || sleep 1
done
cat "$d/$n.json" && rm -f "$d/$n.json" "$d/$n.py"
)SH";

}  // namespace maf::sandbox::detail
