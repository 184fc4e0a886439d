#!/usr/bin/env python3
"""CLI suite: the table of environment variables (`uwjit env --json`, from
common/include/uwjit/common/env_variables.hpp) against the manual's table, and every variable of
it swept with bad and good values: every value through `uwjit env` (the table's own check), and a
sample of them through `uwjit compile` and a host program, which read the same table at start-up:
a bad value is rejected by all three with the same message, a good one accepted by all three.

usage: env_table.py UWJIT KERNEL_HOST SOURCE_DIR
"""
import json
import os
import subprocess
import sys
import tempfile

uwjit, host, src = sys.argv[1:4]
kernel = os.path.join(src, "examples", "kernels", "diffusion.cpp")
checks = 0
failures = 0


def check(ok, what, detail=""):
    global checks, failures
    checks += 1
    if not ok:
        failures += 1
        print(f"FAIL: {what}" + (f"\n  {detail}" if detail else ""))


sandbox = tempfile.mkdtemp(prefix="uwjit-env.")
work = os.path.join(sandbox, "work")
os.makedirs(work)
base_env = {k: v for k, v in os.environ.items() if not k.startswith("UWJIT_")}
base_env.pop("XDG_CACHE_HOME", None)
base_env["UWJIT_CACHE_DIR"] = os.path.join(sandbox, "cache")
# UWJIT_PERF=1 writes a jitdump under $JITDUMPDIR (else $HOME): keep it in the sandbox.
base_env["JITDUMPDIR"] = os.path.join(sandbox, "jitdump")


def run(args, name=None, value=None):
    env = dict(base_env)
    if name is not None:
        env[name] = value
    done = subprocess.run(args, env=env, cwd=work, capture_output=True, timeout=300)
    return done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")


# --- The table ----------------------------------------------------------------------------------
code, out, err = run([uwjit, "env", "--json"])
check(code == 0, "uwjit env exits 0 with no variable set", err)
report = json.loads(out)
table = report["variables"]
check(report["errors"] == [], "no errors with no variable set", str(report["errors"]))
names = [row["name"] for row in table]
check(len(names) == len(set(names)), "each variable once in the table", str(names))


# The manual's table (docs/reference/environment.md) is the table: same rows, same order, same
# words.
def readme_row(row):
    default = row["default"] if row["kind"] == "path" else f"`{row['default']}`"
    salt = "yes" if row["salt"] else "no"
    return f"| `{row['name']}` | {row['accepted']} | {default} | {salt} | {row['effect']} |"


expected = ["| variable | accepted | default | changes the salt | effect |", "|---|---|---|---|---|"]
expected += [readme_row(row) for row in table]
with open(os.path.join(src, "docs", "reference", "environment.md"), encoding="utf-8") as page:
    lines = page.read().splitlines()
start = lines.index("## The variables")
found = []
for line in lines[start + 1:]:
    if line.startswith("|"):
        found.append(line)
    elif found:
        break
check(found == expected, "the manual's table of environment variables is the library's table",
      "expected:\n" + "\n".join(expected))

# Every folder reads its variables through the table's rows (env::get_bool(env::vars::perf),
# ...), never by a name of its own: a read by name would escape `uwjit env` and this sweep.
# UWJIT_TEST_FAULT is the fault tests' own switch, not a setting; HOME and COLUMNS are the
# system's (the home directory, a terminal's width), read as every program reads them; SLURM_*,
# OMPI_COMM_WORLD_SIZE and PMI_SIZE are the launchers' (comm/src/mpi_comm.cpp checks that MPI
# sees the job that srun started).
import re
read_by_name = re.compile(r'(getenv|env::get\w*(<[^>]*>)?)\("(?!UWJIT_TEST_FAULT")[A-Z_]+"')
offenders = []
scanned = 0
for folder in ["common/src", "codegen", "cache", "comm", "engine", "runtime", "driver", "nodes", "tools/src"]:
    for root, _, files in os.walk(os.path.join(src, folder)):
        for file in files:
            if file.endswith((".cpp", ".hpp")):
                scanned += 1
                path = os.path.join(root, file)
                with open(path, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        system = any(name in line for name in (
                            '"HOME"', '"COLUMNS"', '"SLURM_STEP_NUM_TASKS"', '"SLURM_PROCID"',
                            '"OMPI_COMM_WORLD_SIZE"', '"PMI_SIZE"'))
                        if read_by_name.search(line) and not system:
                            offenders.append(f"{os.path.relpath(path, src)}:{number}: {line.strip()}")
check(scanned > 50 and not offenders,
      f"no source of the library reads a variable by name, not through env_variables.hpp "
      f"({scanned} files)", "\n  ".join(offenders))

# --- The sweep ----------------------------------------------------------------------------------
# Bad for every kind that can refuse a value; an empty value is unset (accepted, below).
bad_common = [" ", "   ", "\t", "garbage", "NaN", "nan", "inf", "-inf", "1e999", "1e3",
              "99999999999999999999", "18446744073709551616", "-1", "0x10", "1 0", "1,5", "2 GB",
              "５", "ünïcödé", "\u00a01", "'1'", "\"1\"", "yes please", "on;off", "$HOME"]
bad_by_kind = {
    "boolean": ["2", "tru", " 1", "1 ", "y", "enabled", "0.0"],
    "size": ["big", "-5M", "5X", "5MM", "1.5.5G", "99999999999T", "M", "5 M B", "1e3G"],
    "duration": ["soon", "5w", "1h30m", "1 m", "11575d", "1000000001", "10ms", "-0.5"],
    "choice": ["loud", "warning", "warn ", "err", "0", "WARN!"],
}
good_by_kind = {
    "boolean": ["", "1", "0", "true", "FALSE", "Yes", "off", "ON"],
    "size": ["", "4096", "500M", "2g", "1.5K", "3GiB", "10MB", " 2G "],
    "duration": ["", "30", "1.5", "10m", "2h", "7d", "0", " 30 "],
    "choice": [""],
    "path": ["", os.path.join(sandbox, "somewhere"), "relative/dir"],
}

# Every value goes through `uwjit env`; `uwjit compile` and the host, which validate the same
# table when they start, get a sample of each variable's values (its first and last bad values of
# both lists, and its first, middle and last good ones), so that the sweep costs a third of the
# processes and still shows each program refusing and accepting each variable.
def sample(values, picks):
    return {values[i] for i in picks if -len(values) <= i < len(values)}


for row in table:
    name, kind, accepted = row["name"], row["kind"], row["accepted"]
    check(kind in good_by_kind, f"{name}: the sweep knows its kind {kind}")
    bad = [] if kind == "path" else bad_common + bad_by_kind[kind]
    good = list(good_by_kind.get(kind, []))
    if kind == "choice":
        good += accepted.split(", ") + [accepted.split(", ")[0].upper()]
    bad_sampled = set() if kind == "path" else (sample(bad_common, [0, -1]) |
                                               sample(bad_by_kind[kind], [0, -1]))
    good_sampled = sample(good, [0, len(good) // 2, -1])
    for value in bad:
        message = f'{name}: unrecognised value "{value}" (accepted: {accepted})'
        what = f"{name}={value!r}"
        code, out, err = run([uwjit, "env", "--json"], name, value)
        check(code == 2, f"{what}: uwjit env exits 2", f"exit {code}, stderr: {err}")
        check(f"uwjit: error: {message}" in err.splitlines(), f"{what}: uwjit env names it", err)
        try:
            errors = json.loads(out)["errors"]
        except (ValueError, KeyError):
            errors = None
        check(errors == [{"variable": name, "message": message}],
              f"{what}: uwjit env --json lists it in errors", str(errors))
        if value not in bad_sampled:
            continue
        code, out, err = run([uwjit, "compile", kernel], name, value)
        check(code == 2, f"{what}: uwjit compile exits 2", f"exit {code}, stderr: {err}")
        check(f"uwjit: error: {message}" in err.splitlines(), f"{what}: uwjit compile names it", err)
        code, out, err = run([host], name, value)
        check(code == 1, f"{what}: the host exits 1", f"exit {code}, stderr: {err}")
        check(f"kernel_host: error: {message}" in err.splitlines(), f"{what}: the host names it", err)
    for value in good:
        what = f"{name}={value!r}"
        code, out, err = run([uwjit, "env", "--json"], name, value)
        check(code == 0, f"{what}: uwjit env accepts it", f"exit {code}, stderr: {err}")
        if code == 0:
            seen = next(r for r in json.loads(out)["variables"] if r["name"] == name)
            check(seen["value"] == (value or None) and seen["error"] is None,
                  f"{what}: uwjit env shows the value as set", str(seen))
        if value not in good_sampled:
            continue
        code, out, err = run([uwjit, "compile", kernel], name, value)
        check(code == 0, f"{what}: uwjit compile accepts it", f"exit {code}, stderr: {err}")
        code, out, err = run([host], name, value)
        check(code == 0 and json.loads(out.splitlines()[-1])["ok"] is True if code == 0 else False,
              f"{what}: the host accepts it and computes right", f"exit {code}, stderr: {err}")

# Several bad variables at once: uwjit env lists every one, and still prints the rest.
bad_all = {row["name"]: "garbage" for row in table if row["kind"] != "path"}
env = dict(base_env, **bad_all)
done = subprocess.run([uwjit, "env"], env=env, cwd=work, capture_output=True, timeout=300)
err_lines = done.stderr.decode().splitlines()
check(done.returncode == 2, "every variable bad: uwjit env exits 2")
for row in table:
    if row["kind"] != "path":
        message = f'{row["name"]}: unrecognised value "garbage" (accepted: {row["accepted"]})'
        check(f"uwjit: error: {message}" in err_lines, f"every variable bad: {row['name']} listed")
check("target triple" in done.stdout.decode(), "every variable bad: the rest is still printed")
# uwjit compile and a host stop at the first bad one in the table's order.
first = next(row for row in table if row["kind"] != "path")
first_message = f'{first["name"]}: unrecognised value "garbage" (accepted: {first["accepted"]})'
for program, prefix, exit_code in [([uwjit, "compile", kernel], "uwjit", 2), ([host], "kernel_host", 1)]:
    done = subprocess.run(program, env=env, cwd=work, capture_output=True, timeout=300)
    check(done.returncode == exit_code and
          done.stderr.decode().splitlines()[-1:] == [f"{prefix}: error: {first_message}"],
          f"every variable bad: {prefix} names the first of the table", done.stderr.decode())

# A variable is refused also where this process would not need it: UWJIT_CACHE_TRUST_SHARED
# with the disk cache off.
env = dict(base_env, UWJIT_CACHE="0", UWJIT_CACHE_TRUST_SHARED="garbage")
for program, exit_code in [([uwjit, "env"], 2), ([uwjit, "compile", kernel], 2), ([host], 1)]:
    done = subprocess.run(program, env=env, cwd=work, capture_output=True, timeout=300)
    check(done.returncode == exit_code and "UWJIT_CACHE_TRUST_SHARED: unrecognised value "
          "\"garbage\"" in done.stderr.decode(),
          f"UWJIT_CACHE_TRUST_SHARED=garbage with UWJIT_CACHE=0: {program[-1]} refuses it",
          done.stderr.decode())

subprocess.run(["rm", "-rf", sandbox])
print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
