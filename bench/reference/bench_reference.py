#!/usr/bin/env python3
"""Drive the Python reference (maf-sandbox + maf-sandbox-docker) through its own router on the
operations bench/docker/bench_docker times, on the same engine and image, and print the
medians as JSON on stdout (progress on stderr).

Nothing of the reference is committed here: point --reference at a local clone of
`sokolaidev/maf-extensions`. It needs only Python >= 3.12 and its standard library. The operation
names are bench_docker's row names, so scripts/bench can join the two tables row by row
(README.md beside this file says how and what the columns mean).

Unpatched, the reference can hang in its bounded `docker cp` read (CPython gh-119710, README.md);
this driver applies one named runtime patch for that (`patch_wait`) and records it in its output;
--no-patch runs it as published.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
import warnings

IMAGE = "maf-sandbox-test/busybox:1"
KIB = b"x" * 1024
MIB = b"x" * (1 << 20)
READ_CAP = 4 << 20
# Bounds every awaited reference call, so a hang is reported as one rather than stalling the run.
CALL_BOUND_S = 120.0


def log(msg: str) -> None:
    print(f"bench_reference: {msg}", file=sys.stderr, flush=True)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reference", required=True, help="a local clone of sokolaidev/maf-extensions")
    p.add_argument("--runs", type=int, default=10, help="runs per warm operation (cold rows: max(3, runs/2))")
    p.add_argument("--image", default=IMAGE)
    p.add_argument("--docker", default=os.environ.get("MAF_SANDBOX_DOCKER", "docker"), help="the docker client")
    p.add_argument("--conversations", type=int, default=8)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--no-patch", action="store_true",
                   help="run the reference unpatched: its bounded reads can then hang (README.md)")
    return p.parse_args()


def import_reference(root: str):
    packages = os.path.join(root, "packages")
    core = os.path.join(packages, "maf-sandbox", "src")
    docker = os.path.join(packages, "maf-sandbox-docker", "src")
    for path in (core, docker):
        if not os.path.isdir(path):
            sys.exit(f"bench_reference: {path} is not there: --reference must be a clone of "
                     "sokolaidev/maf-extensions")
    sys.path[:0] = [core, docker]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the packages warn that they are experimental
        import maf_sandbox
        import maf_sandbox_docker
    return maf_sandbox, maf_sandbox_docker


def reference_version(root: str) -> str:
    try:
        return subprocess.check_output(["git", "-C", root, "describe", "--always", "--tags"],
                                       text=True, stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


class Bench:
    def __init__(self, ms, md, args):
        self.ms, self.md, self.args = ms, md, args
        self.scope = "maf-bench-ref-" + secrets.token_hex(4)
        sweep = os.environ.get("MAF_BENCH_SWEEP_FILE")
        if sweep:  # scripts/bench removes whatever this selects, whatever happens to us
            with open(sweep, "a") as f:
                f.write(f"label=maf-sandbox.scope={self.scope}\n")
        self.backend = md.DockerSandboxBackend(md.DockerSandboxConfig(docker_path=args.docker))
        self.router = ms.SandboxRouter([self.backend], min_isolation=ms.Isolation.CONTAINER)
        cap = ms.Capability
        # The reference creates no work directory (its `docker run` has no -w): /tmp is one the
        # image has, and the raw floors of bench_docker use it too.
        self.wd = "/tmp"

        def spec(kind, outputs):
            return ms.SandboxSpec(
                kind=kind, image=args.image, work_dir=self.wd,
                requires=frozenset({cap.EXEC, cap.FILES_IN, cap.FILES_OUT}),
                declared_outputs=tuple(ms.DeclaredOutput(path=p, media_type="text/plain") for p in outputs))

        self.spec = spec("shell", ("out-1.txt", "out-2.txt", "out-3.txt"))
        self.conv_spec = spec("conversation", ("out-1.txt",))

        async def discard(artifact):
            return ms.LandedArtifact(name=artifact.name, display=artifact.name)

        self.sink = ms.OutputSink(deliver=discard)
        self.rows: dict[str, float] = {}
        self.conversations: dict[str, float] = {}

    def key(self, thread: str, agent: str):
        return self.ms.SandboxKey(scope=self.scope, thread_id=thread, agent_dir=agent)

    async def bounded(self, awaitable, what: str):
        try:
            return await asyncio.wait_for(awaitable, CALL_BOUND_S)
        except TimeoutError:
            raise SystemExit(f"bench_reference: the reference's {what} did not return within "
                             f"{CALL_BOUND_S:.0f} s (README.md: CPython gh-119710)") from None

    async def timed(self, make, what):
        start = time.perf_counter()
        result = await self.bounded(make(), what)
        return (time.perf_counter() - start) * 1e3, result

    async def row(self, name, make, runs=None):
        runs = runs or self.args.runs
        await self.bounded(make(), name)  # warm-up, as bench_docker does
        values = [(await self.timed(make, name))[0] for _ in range(runs)]
        self.rows[name] = statistics.median(values)
        log(f"{name}: {self.rows[name]:.1f} ms")

    async def all(self):
        r = self.router
        cold = max(3, self.args.runs // 2)
        a, d = [], []
        for i in range(cold):
            k = self.key("t", f"cold-{i}")
            ms_, _ = await self.timed(lambda: r.acquire(k, self.spec), "acquire")
            a.append(ms_)
            ms_, _ = await self.timed(lambda: r.dispose(k), "dispose")
            d.append(ms_)
        self.rows["cold acquire (create + start + probes)"] = statistics.median(a)
        self.rows["dispose (remove one workload)"] = statistics.median(d)
        log(f"cold acquire {self.rows['cold acquire (create + start + probes)']:.1f} ms, "
            f"dispose {self.rows['dispose (remove one workload)']:.1f} ms")

        wk = self.key("t", "warm")
        sb = await self.bounded(r.acquire(wk, self.spec), "acquire")
        for name in ("bench.txt", "out-1.txt", "out-2.txt", "out-3.txt"):
            await self.bounded(sb.write_file(name, KIB, working_directory=self.wd), "write_file")
        await self.row("warm acquire (held sandbox)", lambda: r.acquire(wk, self.spec))
        await self.row("warm exec `true`", lambda: sb.exec(["true"], working_directory=self.wd, timeout=60.0))
        for payload, of in ((KIB, "1 KiB"), (MIB, "1 MiB")):
            await self.row(f"write {of} (incl. freeze)",
                           lambda: sb.write_file("bench.txt", payload, working_directory=self.wd))
            await self.row(f"stat {of} file (incl. freeze)",
                           lambda: sb.stat_file("bench.txt", working_directory=self.wd))
            await self.row(f"read {of} (incl. freeze)",
                           lambda: sb.read_file("bench.txt", working_directory=self.wd, max_bytes=READ_CAP))
            got = await self.bounded(sb.read_file("bench.txt", working_directory=self.wd, max_bytes=READ_CAP),
                                     "read_file")
            if bytes(got) != payload:
                raise SystemExit(f"bench_reference: read_file returned {len(got)} bytes, not {len(payload)}")
        await self.row("collect 3 outputs of 1 KiB",
                       lambda: self.ms.collect_outputs(sb, self.spec, sink=self.sink))
        await self.bounded(r.dispose(wk), "dispose")

        v = []
        for i in range(cold):
            thread = f"scope-{i}"
            for agent in ("a", "b", "c"):
                await self.bounded(r.acquire(self.key(thread, agent), self.spec), "acquire")
            ms_, n = await self.timed(lambda: r.dispose_scope(self.scope, thread), "dispose_scope")
            if n != 3:
                raise SystemExit(f"bench_reference: dispose_scope disposed {n}, not 3")
            v.append(ms_)
        self.rows["dispose_scope of 3"] = statistics.median(v)
        log(f"dispose_scope of 3: {self.rows['dispose_scope of 3']:.1f} ms")
        await self.throughput(self.args.conversations, self.args.batches)

    async def conversation(self, thread, i):
        k = self.key(thread, f"c{i}")
        sb = await self.router.acquire(k, self.conv_spec)
        result = await sb.exec(["true"], working_directory=self.wd, timeout=60.0)
        if result.exit_code != 0:
            raise SystemExit("bench_reference: exec `true` failed")
        await sb.write_file("out-1.txt", b"c" * 1024, working_directory=self.wd)
        landed = await self.ms.collect_outputs(sb, self.conv_spec, sink=self.sink)
        if len(landed) != 1:
            raise SystemExit("bench_reference: collect failed")
        await self.router.dispose(k)

    async def throughput(self, n, batches):
        name = f"throughput, {n} conversations ({batches} batch{'' if batches == 1 else 'es'})"
        v = []
        for b in range(batches):
            thread = f"tp-{n}-{b}"
            ms_, _ = await self.timed(
                lambda: asyncio.gather(*(self.conversation(thread, i) for i in range(n))), name)
            v.append(ms_)
        self.rows[name] = statistics.median(v)
        self.conversations[name] = n
        log(f"{name}: {self.rows[name]:.1f} ms, {n / self.rows[name] * 1e3:.2f} conversations/s")

    async def close(self):
        try:
            await asyncio.wait_for(self.router.dispose_scope(self.scope, "t"), CALL_BOUND_S)
        except Exception as e:  # scripts/bench's sweep removes what is left
            log(f"final dispose_scope failed: {e!r}")


def patch_wait() -> str:
    """The one runtime patch this driver applies (unless --no-patch), named in its output.

    The reference's bounded `docker cp` read (`_read_bounded`, used by stat_file, read_file and
    the stat inside write_file) stops reading stdout at its limit, kills the child and then
    awaits `process.wait()`, which returns only once every pipe has closed (CPython
    gh-119710); a stdout pipe left with unread data never reports its end. The patch makes
    `Process.wait` discard what is left unread on stdout first, so the pipe reaches its end;
    it changes nothing else.
    """
    original = asyncio.subprocess.Process.wait

    async def wait(self):
        if self.stdout is not None:
            while await self.stdout.read(1 << 16):
                pass
        return await original(self)

    asyncio.subprocess.Process.wait = wait
    return "asyncio.subprocess.Process.wait drains unread stdout first (CPython gh-119710)"


async def run(args) -> dict:
    ms, md = import_reference(args.reference)
    patched = None if args.no_patch else patch_wait()
    bench = Bench(ms, md, args)
    try:
        await bench.all()
    finally:
        await bench.close()
    return {
        "reference": reference_version(args.reference),
        "python": sys.version.split()[0],
        "image": args.image,
        "runs": args.runs,
        "patch": patched,
        "operations": bench.rows,
        "conversations": bench.conversations,
    }


def main() -> None:
    if sys.version_info < (3, 12):
        sys.exit(f"bench_reference: the reference needs Python >= 3.12; this is {sys.version.split()[0]} "
                 "(set MAF_BENCH_REFERENCE_PYTHON for scripts/bench)")
    args = parse_args()
    print(json.dumps(asyncio.run(run(args)), indent=1))


if __name__ == "__main__":
    main()
