#!/usr/bin/env python3
"""Every fenced code block of README.md and docs/**/*.md is tested.

The pages are parsed with markdown-it (CommonMark), as a reader's viewer parses them, and each
fence is taken by its info string and by the HTML comment just before it:

  <!-- file: PATH -->     the block is the repository's file PATH, byte for byte (the tests build
                          and run that file);
  <!-- excerpt: PATH -->  the block is a part of PATH: each of its non-blank lines is a line of
                          PATH (compared without leading and trailing blanks), in the same order;
  <!-- not run: REASON --> the block is shown but cannot run in a test; REASON must be one of
                          NOT_RUN_REASONS below (a GPU, a batch system, installing packages).
  ```text, ```console    output or a transcript: not run (a `console` block shows `$ ` commands
                          with their output, as a terminal did).
  ```sh / ```bash        run by bash -eo pipefail in a fresh sandbox directory, with the build's
                          bin/ first on PATH and a fresh UWJIT_CACHE_DIR; `examples` in the
                          sandbox is the repository's, and build/release and build/ci are the
                          build tree under test.
  ```python              run by the build's Python with PYTHONPATH at the build's python/, in a
                          fresh sandbox as above.
  ```cpp                 compiled against the build tree's headers and libuwjit (and libuwjit_mpi
                          with MPI when it includes <uwjit/mpi.hpp>) and run in a sandbox; a
                          C++ block without main() must be a file or an excerpt.
  ```cmake, ```json, ... must be a file or an excerpt.
  ```{toctree}, ```{automodule}, ```{doxygenclass}, ...  MyST directives (DIRECTIVES): no code.

A fence that is not closed (it runs to the end of the page) or that swallows another fence (a
line of backticks with text after it does not close a fence, CommonMark says) fails, naming the
line. Usage: check_code_blocks.py CONFIG.json PAGE|DIR... (relative to the source root; a
directory stands for its *.md pages)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from markdown_it import MarkdownIt

NOT_RUN_REASONS = {
    "installs packages and builds the project": "CI runs it: .ci/run runs tools/test.sh",
    "needs an NVIDIA GPU": "the GPU tests (label gpu) run it where there is one",
    "needs a batch system": "a cluster's job script",
    "builds another preset": "the static preset takes about 10 minutes to build",
    "runs the whole benchmark": "two minutes and more; the test bench_quick runs its short form",
}
TRANSCRIPTS = {"text", "console", "output", ""}
# MyST directives written as fences: they build the manual (tables of contents, the API pages)
# and are no code.
DIRECTIVES = {"{toctree}", "{automodule}", "{autoclass}", "{autofunction}", "{doxygenclass}",
              "{doxygenstruct}", "{doxygenfunction}", "{doxygenenum}", "{doxygennamespace}",
              "{doxygenfile}", "{doxygentypedef}", "{doxygenvariable}", "{doxygendefine}",
              "{eval-rst}"}
SHELLS = {"sh", "bash", "shell"}
MARKER = re.compile(r"^\s*<!--\s*(file|excerpt|not run):\s*(.*?)\s*-->\s*$")


class Block:
    def __init__(self, page, line, lang, text, marker):
        self.page, self.line, self.lang, self.text, self.marker = page, line, lang, text, marker

    def where(self):
        return f"{self.page}:{self.line}"


def blocks_of(root, page, problems):
    with open(os.path.join(root, page), encoding="utf-8") as f:
        source = f.read()
    lines = source.split("\n")
    tokens = MarkdownIt("commonmark").parse(source)
    found = []
    previous = None
    for token in tokens:
        if token.type == "fence":
            start, end = token.map
            markup = token.markup
            closing = lines[end - 1] if end - 1 < len(lines) else ""
            closed = end - 1 > start and re.fullmatch(
                r" {0,3}" + re.escape(markup[0]) + "{%d,}\\s*" % len(markup), closing)
            if not closed:
                problems.append(f"{page}:{start + 1}: the fence opened here is never closed: it runs "
                                "to the end of the page and swallows what follows")
            for offset, content in enumerate(lines[start + 1:end - 1]):
                if re.match(r" {0,3}" + re.escape(markup[0]) + "{%d,}" % len(markup), content):
                    problems.append(
                        f"{page}:{start + 2 + offset}: a fence line inside the block opened at line "
                        f"{start + 1} (a line of {markup} with text after it does not close a fence, "
                        "so the block swallows what follows)")
            marker = None
            if previous is not None and previous.type == "html_block":
                m = MARKER.match(previous.content.strip().split("\n")[-1])
                if m:
                    marker = (m.group(1), m.group(2))
            lang = token.info.strip().split(" ")[0] if token.info.strip() else ""
            found.append(Block(page, start + 1, lang, token.content, marker))
        previous = token
    return found


def sandbox_env(config, sandbox):
    env = dict(os.environ)
    # the build's programs first, then the interpreter the module was built for (as python3)
    env["PATH"] = os.pathsep.join([config["bin_dir"], os.path.dirname(config["python"]),
                                   env.get("PATH", "")])
    env["UWJIT_CACHE_DIR"] = os.path.join(sandbox, "cache")
    env["PYTHONPATH"] = config["python_dir"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.setdefault("UWJIT_LOG_LEVEL", "warn")
    env.pop("UWJIT_CHECK", None)
    for item in config.get("mpi_env", []):
        name, _, value = item.partition("=")
        env[name] = value
    return env


def make_sandbox(config, root):
    sandbox = tempfile.mkdtemp(prefix="uwjit-docs-")
    os.symlink(os.path.join(root, "examples"), os.path.join(sandbox, "examples"))
    os.makedirs(os.path.join(sandbox, "build"))
    for preset in ("release", "ci"):
        os.symlink(config["build_dir"], os.path.join(sandbox, "build", preset))
    return sandbox


def run(args, sandbox, env, timeout):
    try:
        done = subprocess.run(args, cwd=sandbox, env=env, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s"
    out = (done.stdout + done.stderr).decode("utf-8", "replace")
    return done.returncode, out


def compile_cpp(block, config, sandbox, env):
    source = os.path.join(sandbox, "block.cpp")
    with open(source, "w", encoding="utf-8") as f:
        f.write(block.text)
    program = os.path.join(sandbox, "block")
    args = [config["cxx"], "-std=c++20", "-O1", "-o", program, source]
    args += ["-I" + d for d in config["include_dirs"]]
    uses_mpi = "<uwjit/mpi.hpp>" in block.text
    if uses_mpi:
        if not config.get("mpi_lib"):
            return 1, "the block includes <uwjit/mpi.hpp>, but this build has no MPI layer"
        # the C bindings only, as CMake's MPI::MPI_C gives them
        args += ["-DOMPI_SKIP_MPICXX=1", "-DMPICH_SKIP_MPICXX=1"]
        args += ["-I" + d for d in config["mpi_include_dirs"]] + [config["mpi_lib"]]
        args += config["mpi_libraries"] + ["-Wl,-rpath," + os.path.dirname(config["mpi_lib"])]
    args += [config["lib"], "-Wl,-rpath," + os.path.dirname(config["lib"])]
    code, out = run(args, sandbox, env, 300)
    if code != 0:
        return code, "compile: " + " ".join(args) + "\n" + out
    return run([program], sandbox, env, 300)


def check(block, config, root):
    """(verdict, detail): verdict is 'pass', 'fail' or a kind of block not run."""
    if block.marker:
        kind, value = block.marker
        if kind == "file":
            path = os.path.join(root, value)
            if not os.path.isfile(path):
                return "fail", f"names {value}, which does not exist"
            with open(path, encoding="utf-8") as f:
                if f.read() != block.text:
                    return "fail", f"differs from {value}"
            return "pass", f"equals {value}"
        if kind == "excerpt":
            path = os.path.join(root, value)
            if not os.path.isfile(path):
                return "fail", f"is an excerpt of {value}, which does not exist"
            with open(path, encoding="utf-8") as f:
                have = [line.strip() for line in f.read().split("\n")]
            at = 0
            for line in block.text.split("\n"):
                want = line.strip()
                if not want:
                    continue
                while at < len(have) and have[at] != want:
                    at += 1
                if at == len(have):
                    return "fail", f"line {want!r} is not in {value} (in order)"
                at += 1
            return "pass", f"excerpt of {value}"
        if kind == "not run":
            if value not in NOT_RUN_REASONS:
                return "fail", (f"not run: {value!r} is not an accepted reason "
                                f"({'; '.join(NOT_RUN_REASONS)})")
            return "not run", value
    if block.lang in TRANSCRIPTS:
        return "transcript", block.lang or "plain"
    if block.lang in DIRECTIVES:
        return "directive", block.lang
    if block.lang not in SHELLS | {"python", "cpp", "c++"}:
        return "fail", f"a {block.lang} block must be marked <!-- file: PATH --> or <!-- excerpt: PATH -->"
    if block.lang in ("cpp", "c++") and not re.search(r"\bint\s+main\s*\(", block.text):
        return "fail", "a C++ block without main() must be marked <!-- file: --> or <!-- excerpt: -->"
    sandbox = make_sandbox(config, root)
    try:
        env = sandbox_env(config, sandbox)
        if block.lang in SHELLS:
            code, out = run(["bash", "-eo", "pipefail", "-c", block.text], sandbox, env, 300)
        elif block.lang == "python":
            script = os.path.join(sandbox, "block.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write(block.text)
            code, out = run([config["python"], script], sandbox, env, 300)
        else:
            code, out = compile_cpp(block, config, sandbox, env)
        if code != 0:
            return "fail", f"exit {code}:\n" + "\n".join("    " + l for l in out.splitlines()[-30:])
        return "pass", f"ran ({block.lang})"
    finally:
        shutil.rmtree(sandbox, ignore_errors=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        config = json.load(f)
    root = config["source_dir"]
    pages = []
    for arg in sys.argv[2:]:
        if os.path.isdir(os.path.join(root, arg)):
            pages += sorted(os.path.join(arg, name) for name in os.listdir(os.path.join(root, arg))
                            if name.endswith(".md"))
        else:
            pages.append(arg)
    problems = []
    blocks = []
    for page in pages:
        blocks += blocks_of(root, page, problems)
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        verdicts = list(pool.map(lambda b: check(b, config, root), blocks))
    counts = {}
    for block, (verdict, detail) in zip(blocks, verdicts):
        counts[verdict] = counts.get(verdict, 0) + 1
        if verdict == "fail":
            problems.append(f"{block.where()}: {block.lang or 'plain'} block: {detail}")
        else:
            print(f"{verdict:10} {block.where()}: {detail}")
    for problem in problems:
        print("FAIL " + problem)
    summary = ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
    print(f"{len(blocks)} blocks in {len(pages)} pages ({summary}) in "
          f"{time.monotonic() - started:.0f} s")
    if not blocks:
        print("no code blocks found")
        return 1
    passed = counts.get("pass", 0)
    print(f"{passed} passed, {len(problems)} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
