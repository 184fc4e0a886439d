#!/usr/bin/env python3
"""Fault suite of the kernel cache: real processes killed, stopped and starved of disk.

    faults.py --uwjit UWJIT --host KERNEL_HOST SCENARIO [--trials N] [--seed S]

Scenarios (each in a fresh sandbox, each bounded: every process has a deadline):
  kill            writers killed with SIGKILL at random times and at every named point of a
                  publish (UWJIT_TEST_FAULT, cache/src/fault_point.hpp) while a reader requests
                  the same kernels; entries are damaged between trials. After each trial no
                  visible entry may be bad (`uwjit cache verify`), the reader must have computed
                  right; periodically a healer must leave a cache that verifies clean. Trials:
                  --trials, else UWJIT_FAULT_TRIALS, else 100 (use 1000 for a long local run).
  stopped-holder  a writer stopped (SIGSTOP) while holding a key lock: waiters time out
                  (UWJIT_LOCK_TIMEOUT), compile privately, warn and go on; wipe, verify --fix
                  and prune run while a writer is stopped between its renames leave its files
                  alone, and its entry is whole once it goes on.
  full-disk       file-size limits (RLIMIT_FSIZE, SIGXFSZ ignored): the host keeps running,
                  nothing torn is left.
  full-tmpfs      a really full file system (ENOSPC): a 48 KiB tmpfs mounted in a private mount
                  namespace (a user namespace too when not root). Where no namespace may mount,
                  it says why and exits 77, which ctest reports as skipped.
  crowd           8 processes x 20 kernels at once: every kernel compiled exactly once.
  checkpoint      `uwjit run heat --restore FILE --checkpoint FILE` killed with SIGKILL at random
                  moments (half of them just after the checkpoint's temporary appears): FILE is
                  always byte for byte the old checkpoint or the new one, never torn, and
                  `--restore` of it resumes bit for bit like an uninterrupted run. Trials as for
                  kill.

Prints one line per failed check and ends with "N passed, N failed".
"""
import argparse
import glob
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# Kernel indices per scenario, so that a failure message names a kernel no other test uses.
POOL_FIRST = 100
FAULT_POINTS = [
    "publish:begin",
    "publish:object-partial",
    "publish:temporaries-written",
    "publish:object-committed",
    "publish:source-committed",
    "publish:manifest-committed",
    "remove:manifest-removed",
]
DEADLINE_S = 120  # any single process; a hang is a failure, not a stuck suite


class Suite:
    def __init__(self, args):
        self.uwjit = args.uwjit
        self.host = args.host
        self.checks = 0
        self.failures = 0
        self.root = tempfile.mkdtemp(prefix="uwjit-faults.")
        self.facts = {}  # measured numbers, printed at the end

    def check(self, condition, what, detail=""):
        self.checks += 1
        if not condition:
            self.failures += 1
            print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""), flush=True)
        return condition

    def env(self, cache, **extra):
        env = {k: v for k, v in os.environ.items() if not k.startswith("UWJIT_")}
        env.pop("XDG_CACHE_HOME", None)
        env["UWJIT_CACHE_DIR"] = cache
        env["UWJIT_LOG_LEVEL"] = "warn"
        env.update({k: str(v) for k, v in extra.items()})
        return env

    def host_args(self, first, count, offset=0):
        return [self.host, "--first", str(first), "--kernels", str(count), "--offset",
                str(offset), "--opt", "0"]

    def start_host(self, cache, first, count, offset=0, **env):
        return subprocess.Popen(self.host_args(first, count, offset), env=self.env(cache, **env),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def finish(process, deadline=DEADLINE_S):
        """(exit code, parsed JSON line or None, stderr); a process past its deadline is killed."""
        try:
            out, err = process.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            return "timeout", None, err
        report = None
        for line in out.splitlines():
            if line.startswith("{"):
                report = json.loads(line)
        return process.returncode, report, err

    def run_host(self, cache, first, count, offset=0, **env):
        return self.finish(self.start_host(cache, first, count, offset, **env))

    def verify(self, cache):
        """`uwjit cache verify --json` as (exit code, report)."""
        if not os.path.isdir(cache):
            # A writer killed before it created the directory: nothing there, nothing torn.
            return 0, {"ok": True, "entries": [], "orphans": [], "stale_temporaries": [],
                       "removed": []}
        result = subprocess.run([self.uwjit, "cache", "verify", "--json"], env=self.env(cache),
                                capture_output=True, text=True, timeout=DEADLINE_S)
        try:
            return result.returncode, json.loads(result.stdout)
        except json.JSONDecodeError:
            return result.returncode, {"ok": False, "entries": [], "orphans": [],
                                       "unparsed": result.stdout + result.stderr}

    def host_ok(self, code, report, err, what):
        return self.check(code == 0 and report is not None and report["ok"],
                          f"{what}: the host runs and computes right",
                          f"exit {code}, report {report}, stderr {err.strip()[-600:]}")


def temporaries(cache):
    return sorted(glob.glob(os.path.join(cache, ".uwjit-tmp.*")))


def entry_keys(cache):
    return sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(cache, "*.json"))
                  if len(os.path.basename(p)) == 21)


def damage(cache, key, rng):
    """Damages one entry as a failing disk or a careless person would; returns the kind."""
    base = os.path.join(cache, key)
    kind = rng.choice(["truncate", "flip", "no-object", "bad-manifest", "other-format"])
    try:
        if kind == "truncate":
            os.truncate(base + ".o", os.path.getsize(base + ".o") // 3)
        elif kind == "flip":
            data = bytearray(open(base + ".o", "rb").read())
            data[rng.randrange(len(data))] ^= 0x20
            open(base + ".o", "wb").write(data)
        elif kind == "no-object":
            os.remove(base + ".o")
        elif kind == "bad-manifest":
            open(base + ".json", "w").write('{"format": 1, "key": "')
        else:
            manifest = json.load(open(base + ".json"))
            manifest["format"] = 99
            json.dump(manifest, open(base + ".json", "w"))
    except OSError:
        return None  # raced with nothing: every process is done; a missing file means no entry
    return kind


def scenario_kill(suite, trials, rng):
    cache = os.path.join(suite.root, "cache")
    pool = 6
    # How long an unhindered writer of two cold kernels lives: random kills land within it.
    start = time.monotonic()
    code, report, err = suite.run_host(os.path.join(suite.root, "calibrate"), POOL_FIRST, 2)
    lifetime = time.monotonic() - start
    suite.host_ok(code, report, err, "calibration run")

    outcomes = {"killed": 0, "finished": 0, "left_temporaries": 0, "left_orphans": 0,
                "damaged": 0, "reader_compiled": 0, "reader_disk": 0}
    by_point = {point: 0 for point in FAULT_POINTS}
    healer_runs = 0
    known_keys = {}  # kernel index -> key, as the hosts report them
    named_trials = 0
    for trial in range(trials):
        count = rng.randint(1, 3)
        first = POOL_FIRST + rng.randrange(pool - count + 1)
        named = rng.random() < 0.5
        # The named points in turn, so that each is tried about as often as the others.
        point = FAULT_POINTS[named_trials % len(FAULT_POINTS)] if named else None
        named_trials += 1 if named else 0
        # Set the stage: each wanted entry is made cold (removed, as eviction would), damaged
        # (to be healed), or left whole (a disk hit). A writer stopped at a publish point needs
        # a cold kernel, one stopped while removing a bad entry needs a damaged one.
        present = [known_keys[i] for i in range(first, first + count)
                   if i in known_keys and known_keys[i] in entry_keys(cache)]
        rng.shuffle(present)
        damaged = set()
        for n, key in enumerate(present):
            roll = rng.random()
            if n == 0 and point == "remove:manifest-removed":
                roll = 0.6
            elif n == 0 and named:
                roll = 0.0
            if roll < 0.5:
                for ext in (".json", ".o", ".cpp"):
                    path = os.path.join(cache, key + ext)
                    if os.path.exists(path):
                        os.remove(path)
            elif roll < 0.8 and damage(cache, key, rng):
                outcomes["damaged"] += 1
                damaged.add(key)
        temporaries_before = set(temporaries(cache))
        fault_env = {"UWJIT_TEST_FAULT": f"kill@{point}"} if named else {}
        writer = suite.start_host(cache, first, count, rng.randrange(count), **fault_env)
        # The reader runs alongside the writer, or after it (the next process). Mostly after a
        # writer bound for a named point, so that the reader does not get there first.
        concurrent = rng.random() < (0.25 if named else 0.5)
        reader = suite.start_host(cache, first, count, rng.randrange(count)) if concurrent else None
        if not named:
            delay = rng.uniform(0, lifetime * 1.2)
            try:
                writer.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                writer.send_signal(signal.SIGKILL)
        w_code, _, w_err = suite.finish(writer)
        if reader is None:
            # Right after the kill, before anyone heals: what the writer left may be incomplete
            # (orphans, temporaries) but no entry with a manifest may be bad, but for the ones
            # damaged on purpose that the writer did not reach.
            v_code, v_report = suite.verify(cache)
            suite.check(not [e for e in v_report["entries"]
                             if not e["ok"] and e["key"] not in damaged] and
                        "unparsed" not in v_report,
                        f"trial {trial}: right after the writer "
                        f"{'died at ' + point if named else 'ended'}, no visible entry is bad",
                        json.dumps(v_report)[:800])
            outcomes["left_orphans"] += 1 if v_report["orphans"] else 0
            reader = suite.start_host(cache, first, count, rng.randrange(count))
        r_code, r_report, r_err = suite.finish(reader)
        killed = w_code == -signal.SIGKILL
        outcomes["killed" if killed else "finished"] += 1
        if named and killed:
            by_point[point] += 1
        suite.check(killed or w_code == 0, f"trial {trial}: the writer exits 0 or dies by SIGKILL",
                    f"exit {w_code}, stderr {w_err.strip()[-600:]}")
        reader_role = "a concurrent reader" if concurrent else "the next process"
        if suite.host_ok(r_code, r_report, r_err, f"trial {trial}: {reader_role}"):
            known_keys.update({int(i): key for i, key in r_report["keys"].items()})
            tiers = list(r_report["tiers"].values())
            outcomes["reader_compiled"] += tiers.count("compiled")
            outcomes["reader_disk"] += tiers.count("disk")
        outcomes["left_temporaries"] += 1 if set(temporaries(cache)) - temporaries_before else 0

        # No torn entry is ever visible: every entry with a manifest verifies.
        v_code, v_report = suite.verify(cache)
        bad = [e for e in v_report["entries"] if not e["ok"]]
        suite.check(not bad and "unparsed" not in v_report,
                    f"trial {trial}: no visible entry is bad after the writer "
                    f"{'died at ' + point if named and killed else 'died' if killed else 'ended'}",
                    json.dumps(v_report)[:800])

        if trial % 10 == 9 or trial == trials - 1:
            # The next process heals: the whole pool, then a cache that verifies clean.
            healer_runs += 1
            code, report, err = suite.run_host(cache, POOL_FIRST, pool)
            suite.host_ok(code, report, err, f"trial {trial}: the healer")
            v_code, v_report = suite.verify(cache)
            suite.check(v_code == 0 and v_report["ok"],
                        f"trial {trial}: after the healer the cache verifies clean",
                        json.dumps(v_report)[:800])
            suite.check(entry_keys(cache) and len(entry_keys(cache)) == pool,
                        f"trial {trial}: after the healer every kernel has an entry",
                        str(entry_keys(cache)))

    # Temporaries of killed writers are cleaned once old: age them instead of waiting.
    left = temporaries(cache)
    suite.facts["temporaries left by killed writers"] = len(left)
    old = time.time() - 7200
    for path in left:
        os.utime(path, (old, old), follow_symlinks=False)
    stamp = os.path.join(cache, "cleanup.stamp")
    if os.path.exists(stamp):
        os.remove(stamp)
    code, report, err = suite.run_host(cache, POOL_FIRST, 1)
    suite.host_ok(code, report, err, "the process after the trials")
    suite.check(not temporaries(cache), "leftover temporaries are cleaned once old",
                str(temporaries(cache)))
    v_code, v_report = suite.verify(cache)
    suite.check(v_code == 0, "the cache verifies clean at the end", json.dumps(v_report)[:800])
    suite.check(outcomes["killed"] >= trials // 4, "writers were really killed", str(outcomes))
    if trials >= 50:
        suite.check(all(by_point.values()), "every named fault point was hit", str(by_point))
    suite.facts.update({"trials": trials, **outcomes, "healer runs": healer_runs,
                        "kills by point": by_point,
                        "writer lifetime (s)": round(lifetime, 3)})


def wait_stopped(process, deadline_s):
    """Waits until `process` stops itself; False if it exits or the deadline passes."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pid, status = os.waitpid(process.pid, os.WNOHANG | os.WUNTRACED)
        if pid == process.pid:
            if os.WIFSTOPPED(status):
                return True
            process.returncode = os.waitstatus_to_exitcode(status)
            return False
        time.sleep(0.01)  # polling a child's state: there is no clock to inject here
    return False


def scenario_stopped_holder(suite, rng):
    cache = os.path.join(suite.root, "cache")
    first = POOL_FIRST + 20
    holder = suite.start_host(cache, first, 1, UWJIT_TEST_FAULT="stop@publish:begin")
    stopped = wait_stopped(holder, DEADLINE_S)
    if not suite.check(stopped, "the holder stops itself while holding the key lock"):
        holder.kill()
        suite.finish(holder)
        return
    for attempt in (1, 2):
        code, report, err = suite.run_host(cache, first, 1, UWJIT_LOCK_TIMEOUT="0.3")
        if suite.host_ok(code, report, err, f"waiter {attempt} while the holder is stopped"):
            suite.check((report["compiles"], report["lock_timeouts"], report["published"]) ==
                        (1, 1, 0), f"waiter {attempt} times out, compiles privately, publishes "
                        "nothing", str(report))
        suite.check("compiled privately, not published" in err,
                    f"waiter {attempt} warns that it compiled privately", err.strip())
    bad_timeout = suite.run_host(cache, first, 1, UWJIT_LOCK_TIMEOUT="soon")
    suite.check(bad_timeout[0] == 1 and 'UWJIT_LOCK_TIMEOUT: unrecognised value "soon"' in
                bad_timeout[2], "a bad UWJIT_LOCK_TIMEOUT is an error naming it", bad_timeout[2])
    suite.check(not entry_keys(cache), "a stopped holder has published nothing")
    holder.send_signal(signal.SIGCONT)
    code, report, err = suite.finish(holder)
    if suite.host_ok(code, report, err, "the holder, continued"):
        suite.check(report["published"] == 1, "the continued holder publishes", str(report))
    code, report, err = suite.run_host(cache, first, 1, UWJIT_LOCK_TIMEOUT="0.3")
    if suite.host_ok(code, report, err, "the process after"):
        suite.check((report["compiles"], report["disk_hits"]) == (0, 1),
                    "the process after the holder is served from disk", str(report))

    # A stopped holder that is then killed frees its lock at once: nobody waits out a time-out.
    second = first + 1
    holder = suite.start_host(cache, second, 1, UWJIT_TEST_FAULT="stop@publish:begin")
    if suite.check(wait_stopped(holder, DEADLINE_S), "a second holder stops"):
        holder.send_signal(signal.SIGKILL)
    suite.finish(holder)
    code, report, err = suite.run_host(cache, second, 1, UWJIT_LOCK_TIMEOUT="60")
    if suite.host_ok(code, report, err, "the process after a killed holder"):
        suite.check((report["compiles"], report["lock_timeouts"], report["published"]) ==
                    (1, 0, 1), "after a killed holder: compiled and published, no time-out",
                    str(report))
    v_code, v_report = suite.verify(cache)
    suite.check(v_code == 0, "the cache verifies clean after the stopped holders",
                json.dumps(v_report)[:800])

    # Maintenance racing a slow writer: stopped between renaming its object and its manifest,
    # the writer holds the key lock; wipe, verify --fix and prune must leave its files alone, so
    # that its manifest, renamed when it goes on, never names a removed object.
    n = second + 1
    for point in ("publish:object-committed", "publish:source-committed"):
        for command in (["wipe"], ["verify", "--fix"], ["prune", "--max-size", "0"]):
            what = f"uwjit cache {' '.join(command)} while a writer is stopped at {point}"
            holder = suite.start_host(cache, n, 1, UWJIT_TEST_FAULT=f"stop@{point}")
            if not suite.check(wait_stopped(holder, DEADLINE_S), f"{what}: the writer stops"):
                holder.kill()
                suite.finish(holder)
                continue
            # The writer's files: renamed into place, its manifest not yet.
            writers = [p for p in glob.glob(os.path.join(cache, "*.o")) + glob.glob(
                os.path.join(cache, "*.cpp")) if not os.path.exists(p.rsplit(".", 1)[0] + ".json")]
            result = subprocess.run([suite.uwjit, "cache", *command], env=suite.env(cache),
                                    capture_output=True, text=True, timeout=DEADLINE_S)
            suite.check(writers and all(os.path.exists(p) for p in writers),
                        f"{what}: the writer's files are left in place",
                        f"{writers}: {result.stdout + result.stderr}")
            if command[0] != "prune":
                suite.check(result.returncode == 1,
                            f"{what}: exits 1, since the writer's entry is left",
                            f"exit {result.returncode}: {result.stdout + result.stderr}")
            holder.send_signal(signal.SIGCONT)
            code, report, err = suite.finish(holder)
            if suite.host_ok(code, report, err, f"{what}: the writer, continued"):
                suite.check(report["published"] == 1, f"{what}: the writer, continued, publishes",
                            str(report))
            v_code, v_report = suite.verify(cache)
            suite.check(v_code == 0 and all(e["ok"] for e in v_report["entries"]),
                        f"{what}: no torn entry afterwards", json.dumps(v_report)[:800])
            code, report, err = suite.run_host(cache, n, 1)
            if suite.host_ok(code, report, err, f"{what}: the reader after"):
                suite.check((report["compiles"], report["disk_hits"]) == (0, 1),
                            f"{what}: the writer's entry serves the next process", str(report))
            n += 1


def limited_fsize(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def scenario_full_disk(suite, rng):
    first = POOL_FIRST + 40
    count = 4
    # Per file: nothing (not even CACHEDIR.TAG), half an object, an object but not its source.
    for limit in (0, 700, 2000, 4000):
        cache = os.path.join(suite.root, f"fsize-{limit}")
        process = subprocess.Popen(suite.host_args(first, count), env=suite.env(cache),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=limited_fsize(limit))
        code, report, err = suite.finish(process)
        if suite.host_ok(code, report, err, f"file-size limit {limit} bytes"):
            suite.check(report["publish_failed"] >= 1 and report["compiles"] == count,
                        f"file-size limit {limit}: publishing fails softly, every kernel compiles",
                        str(report))
        suite.check(not temporaries(cache), f"file-size limit {limit}: no temporaries are left",
                    str(temporaries(cache)))
        v_code, v_report = suite.verify(cache)
        suite.check(not [e for e in v_report["entries"] if not e["ok"]],
                    f"file-size limit {limit}: no bad entry is visible", json.dumps(v_report))
    # A cache that could not publish heals when space is back.
    code, report, err = suite.run_host(os.path.join(suite.root, "fsize-2000"), first, count)
    if suite.host_ok(code, report, err, "after the limit is lifted"):
        suite.check(report["published"] + report["disk_hits"] == count,
                    "after the limit is lifted every kernel is published or served", str(report))


SKIPPED = 77  # ctest's SKIP_RETURN_CODE of a scenario that cannot run here


class Skipped(Exception):
    """The scenario cannot run on this machine (the message says why)."""


def scenario_full_tmpfs(suite, rng):
    # A really full filesystem (ENOSPC): a small tmpfs in a private mount namespace (it vanishes
    # with the namespace). Root mounts in a mount namespace of its own; another user, or root in
    # a container that refuses that, in a user namespace that maps it to root.
    first = POOL_FIRST + 50
    if shutil.which("unshare") is None:
        raise Skipped("no unshare (util-linux) to make a mount namespace")
    mount = os.path.join(suite.root, "tmpfs")
    os.mkdir(mount, 0o700)
    script = (f'mount -t tmpfs -o size=48k,mode=0700 tmpfs "{mount}" || exit 77\n'
              f'"$@" > "{suite.root}/tmpfs.host" 2> "{suite.root}/tmpfs.err"; echo $? > '
              f'"{suite.root}/tmpfs.code"\n'
              f'"{suite.uwjit}" cache verify --json > "{suite.root}/tmpfs.verify"\n'
              f'ls -a "{mount}/cache" > "{suite.root}/tmpfs.ls"\n')
    refusals = []
    for namespaces in (["-m"], ["-r", "-m"]):
        result = subprocess.run(["unshare"] + namespaces + ["--propagation", "private", "sh", "-c",
                                                            script, "sh"]
                                + suite.host_args(first, 12),
                                env=suite.env(os.path.join(mount, "cache")), capture_output=True,
                                text=True, timeout=DEADLINE_S)
        if os.path.exists(f"{suite.root}/tmpfs.code"):
            break
        refusals.append(f"unshare {' '.join(namespaces)}: exit {result.returncode}: "
                        f"{result.stderr.strip()[:200]}")
    else:
        raise Skipped("cannot mount a tmpfs here: " + "; ".join(refusals))
    code = int(open(f"{suite.root}/tmpfs.code").read())
    out = open(f"{suite.root}/tmpfs.host").read()
    err = open(f"{suite.root}/tmpfs.err").read()
    report = next((json.loads(l) for l in out.splitlines() if l.startswith("{")), None)
    if suite.host_ok(code, report, err, "a full 48 KiB tmpfs"):
        suite.check(report["publish_failed"] >= 1 and report["published"] >= 1,
                    "a full tmpfs: some entries fit, the rest fail softly", str(report))
        suite.facts["full tmpfs"] = {k: report[k] for k in ("published", "publish_failed")}
    suite.check("No space left on device" in err, "a full tmpfs: the warning says why", err)
    listing = open(f"{suite.root}/tmpfs.ls").read().split()
    suite.check(not [n for n in listing if n.startswith(".uwjit-tmp.")],
                "a full tmpfs: no temporaries are left", str(listing))
    verify = json.loads(open(f"{suite.root}/tmpfs.verify").read())
    suite.check(not [e for e in verify["entries"] if not e["ok"]],
                "a full tmpfs: no bad entry is visible", json.dumps(verify))


def scenario_crowd(suite, rng):
    cache = os.path.join(suite.root, "cache")
    processes, kernels = 8, 20
    first = POOL_FIRST + 60
    start = time.monotonic()
    running = [suite.start_host(cache, first, kernels, p * kernels // processes)
               for p in range(processes)]
    results = [suite.finish(p) for p in running]
    suite.facts["crowd wall time (s)"] = round(time.monotonic() - start, 2)
    compiled = {str(i): 0 for i in range(first, first + kernels)}
    totals = {"compiles": 0, "disk_hits": 0, "lock_waits": 0, "lock_timeouts": 0,
              "publish_failed": 0}
    for n, (code, report, err) in enumerate(results):
        if not suite.host_ok(code, report, err, f"crowd process {n}"):
            continue
        suite.check("error" not in err.lower(), f"crowd process {n} reports no error", err)
        for i, tier in report["tiers"].items():
            compiled[i] += tier == "compiled"
        for name in totals:
            totals[name] += report[name]
    suite.check(all(n == 1 for n in compiled.values()),
                f"{processes} processes x {kernels} kernels: each kernel compiled exactly once",
                str(compiled))
    suite.check(totals["compiles"] == kernels and totals["lock_timeouts"] == 0 and
                totals["publish_failed"] == 0 and
                totals["disk_hits"] == (processes - 1) * kernels,
                "the counters add up: one compile per kernel, the rest from disk", str(totals))
    v_code, v_report = suite.verify(cache)
    suite.check(v_code == 0 and len(v_report["entries"]) == kernels,
                "the crowd's cache verifies clean with one entry per kernel",
                json.dumps(v_report)[:800])
    suite.facts.update({"crowd": f"{processes} x {kernels}", **totals})


def scenario_checkpoint(suite, trials, rng):
    work = os.path.join(suite.root, "checkpoint")
    out = os.path.join(suite.root, "checkpoint-vtk")
    cache = os.path.join(suite.root, "checkpoint-cache")
    os.makedirs(work)
    os.makedirs(out)

    def heat(*args):
        command = [suite.uwjit, "run", "heat", *args, "--output", out]
        return subprocess.Popen(command, env=suite.env(cache), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def run_heat(what, *args):
        code, _, err = suite.finish(heat(*args))
        return suite.check(code == 0, f"{what}: uwjit run heat {' '.join(args)} succeeds",
                           f"exit {code}, stderr {err.strip()[-600:]}")

    def path(name):
        return os.path.join(work, name)

    def read(name):
        with open(path(name), "rb") as f:
            return f.read()

    # References, uninterrupted: step 10 (the old checkpoint), step 20 reached by restoring
    # step 10 (the new one), step 20 and step 30 in one run each.
    size = "48"  # a checkpoint of ~0.9 MB: its write takes long enough to be hit
    if not (run_heat("old", "--size", size, "--steps", "10", "--checkpoint", path("old.ckpt")) and
            run_heat("new", "--restore", path("old.ckpt"), "--steps", "10",
                     "--checkpoint", path("new.ckpt")) and
            run_heat("whole 20", "--size", size, "--steps", "20",
                     "--checkpoint", path("whole20.ckpt")) and
            run_heat("whole 30", "--size", size, "--steps", "30",
                     "--checkpoint", path("whole30.ckpt"))):
        return
    old, new, whole30 = read("old.ckpt"), read("new.ckpt"), read("whole30.ckpt")
    suite.check(new == read("whole20.ckpt"),
                "a checkpoint restored and continued equals the uninterrupted run's")
    suite.check(old != new, "the old and the new checkpoint differ (the test can tell them apart)")

    start = time.monotonic()
    code, _, _ = suite.finish(heat("--restore", path("old.ckpt"), "--steps", "10",
                                   "--checkpoint", path("timing.ckpt")))
    full_run_s = time.monotonic() - start

    seen = {"old": 0, "new": 0, "killed with a temporary present": 0}
    for trial in range(trials):
        target = path("trial.ckpt")
        shutil.copyfile(path("old.ckpt"), target)
        process = heat("--restore", target, "--steps", "10", "--checkpoint", target)
        if trial % 2 == 0:
            # Anywhere in the run, including after it has ended.
            time.sleep(rng.uniform(0, full_run_s * 1.1))
        else:
            # Inside the write: as soon as the temporary exists, then a little later.
            while process.poll() is None and not glob.glob(os.path.join(work, ".uwjit-tmp.*")):
                time.sleep(0.0002)
            time.sleep(rng.uniform(0, 0.004))
        if glob.glob(os.path.join(work, ".uwjit-tmp.*")):
            seen["killed with a temporary present"] += 1
        process.kill()
        process.communicate(timeout=DEADLINE_S)
        data = read("trial.ckpt")
        outcome = "old" if data == old else "new" if data == new else None
        if not suite.check(outcome is not None,
                           f"trial {trial}: the checkpoint is the old or the new one, never torn",
                           f"{len(data)} bytes; old {len(old)}, new {len(new)}"):
            continue
        seen[outcome] += 1
        # The killed writer may leave its temporary (named as only uwjit names them): nothing
        # else appears beside the checkpoint.
        strays = [n for n in os.listdir(work) if n.startswith(".") and
                  not n.startswith(".uwjit-tmp.trial.ckpt.")]
        suite.check(not strays, f"trial {trial}: no file but uwjit's temporary is left", str(strays))
        for leftover in glob.glob(os.path.join(work, ".uwjit-tmp.*")):
            os.remove(leftover)
        # Resumed to step 30, it is bit for bit the uninterrupted run's state.
        more = "20" if outcome == "old" else "10"
        if run_heat(f"trial {trial}: resume", "--restore", target, "--steps", more,
                    "--checkpoint", path("resumed.ckpt")):
            suite.check(read("resumed.ckpt") == whole30,
                        f"trial {trial}: the {outcome} checkpoint resumes bit for bit")
    suite.facts.update({"checkpoint trials": trials, "run (s)": round(full_run_s, 3),
                        **{f"trials leaving the {k} checkpoint" if k in ("old", "new") else k: v
                           for k, v in seen.items()}})


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uwjit", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("scenario",
                        choices=["kill", "stopped-holder", "full-disk", "full-tmpfs", "crowd", "checkpoint"])
    parser.add_argument("--trials", type=int,
                        default=int(os.environ.get("UWJIT_FAULT_TRIALS", "100")))
    parser.add_argument("--seed", type=int, default=int(os.environ.get(
        "UWJIT_FAULT_SEED", str(random.SystemRandom().randrange(1 << 30)))))
    args = parser.parse_args()
    suite = Suite(args)
    rng = random.Random(args.seed)
    print(f"scenario {args.scenario}, seed {args.seed} (UWJIT_FAULT_SEED={args.seed} repeats it)",
          flush=True)
    start = time.monotonic()
    try:
        if args.scenario == "kill":
            scenario_kill(suite, args.trials, rng)
        elif args.scenario == "stopped-holder":
            scenario_stopped_holder(suite, rng)
        elif args.scenario == "full-disk":
            scenario_full_disk(suite, rng)
        elif args.scenario == "full-tmpfs":
            scenario_full_tmpfs(suite, rng)
        elif args.scenario == "checkpoint":
            scenario_checkpoint(suite, args.trials, rng)
        else:
            scenario_crowd(suite, rng)
    except Skipped as why:
        print(f"skipped: {why}")
        return SKIPPED
    finally:
        shutil.rmtree(suite.root, ignore_errors=True)
    suite.facts["wall time (s)"] = round(time.monotonic() - start, 1)
    for name, value in suite.facts.items():
        print(f"  {name}: {value}")
    print(f"{suite.checks - suite.failures} passed, {suite.failures} failed")
    return 0 if suite.failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
