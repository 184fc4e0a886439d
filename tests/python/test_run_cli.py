"""uwjit.run_cli: a Python node kind run from the command line as `uwjit run` runs the built-in
nodes (examples/python/diffuse_cli.py as a program, and run_cli called in this process)."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET

import pytest

import uwjit

EXAMPLE = pathlib.Path(__file__).parents[2] / "examples" / "python" / "diffuse_cli.py"
sys.path.insert(0, str(EXAMPLE.parent))
import diffuse_cli  # noqa: E402


def program(tmp_path, *args):
    env = dict(os.environ, UWJIT_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run([sys.executable, str(EXAMPLE), *map(str, args)], env=env,
                          capture_output=True, text=True, timeout=240)


def test_set_help_lists_each_node_param_with_its_default_meaning_and_range(tmp_path):
    done = program(tmp_path, "--set", "help")
    assert done.returncode == 0, done.stderr
    assert "  rate = 0.2  (accepted: (0, 0.25])\n      diffusion per step\n" in done.stdout
    assert "  nx = 32  (cells; accepted: [1, 4096])\n" in done.stdout


def test_help_names_the_options_and_the_node(tmp_path):
    done = program(tmp_path, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: diffuse_cli.py [--size N|NXxNYxNZ]")
    for word in ["--set NAME=VALUE", "--output-every N", "--checkpoint FILE", "--restore FILE",
                 "--shard x[,y[,z]]", "diffuse     2-D diffusion on a periodic grid"]:
        assert word in done.stdout, word


def test_a_run_reports_as_json_and_writes_the_node_s_vti(tmp_path):
    done = program(tmp_path, "--set", "rate=0.1", "--size", "8x4x1", "--steps", "20", "--output",
                   tmp_path / "out", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["node"] == "diffuse" and report["params"] == {"nx": 8, "ny": 4, "rate": 0.1}
    assert report["steps"] == 20 and report["check"]["passed"] and report["check"]["judged"]
    assert [m["name"] for m in report["check"]["measurements"]] == ["conservation", "field total"]
    assert report["outputs"] == [str(tmp_path / "out" / "diffuse.vti")]
    image = ET.parse(report["outputs"][0]).getroot().find("ImageData")
    assert image.get("WholeExtent") == "0 8 0 4 0 1"


def test_output_every_writes_a_series_and_its_pvd(tmp_path):
    done = program(tmp_path, "--steps", "12", "--output-every", "5", "--output", tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    files = [pathlib.Path(f).name for f in json.loads(done.stdout)["series"]["files"]]
    assert files == ["diffuse_%06d.vti" % s for s in (0, 5, 10, 12)]
    sets = ET.parse(tmp_path / "diffuse.pvd").getroot().find("Collection").findall("DataSet")
    assert [s.get("file") for s in sets] == files


def test_a_checkpoint_restored_goes_on_bit_for_bit_as_the_uninterrupted_run(tmp_path):
    assert program(tmp_path, "--steps", "30", "--output", tmp_path / "whole", "--checkpoint",
                   tmp_path / "whole.ckpt").returncode == 0
    assert program(tmp_path, "--steps", "11", "--output", tmp_path / "first", "--checkpoint",
                   tmp_path / "first.ckpt").returncode == 0
    done = program(tmp_path, "--restore", tmp_path / "first.ckpt", "--steps", "19", "--output",
                   tmp_path / "second", "--checkpoint", tmp_path / "second.ckpt")
    assert done.returncode == 0, done.stderr
    assert "restored " in done.stdout and "at step 11" in done.stdout
    assert (tmp_path / "second.ckpt").read_bytes() == (tmp_path / "whole.ckpt").read_bytes()


def test_misuse_is_exit_2_naming_what_is_wrong(tmp_path):
    done = program(tmp_path, "--set", "rat=0.1")
    assert done.returncode == 2
    assert 'unknown param "rat"' in done.stderr and "did you mean rate?" in done.stderr
    # A node param the node itself refuses, with a uwjit.UsageError.
    done = program(tmp_path, "--set", "rate=0.5")
    assert done.returncode == 2
    assert done.stderr.startswith("diffuse_cli.py: error: node kind \"diffuse\"'s make raised "
                                  "uwjit.UsageError: diffuse: param \"rate\" must be in (0, 0.25]")


def test_sigint_stops_the_program_after_a_step_with_exit_130(tmp_path):
    env = dict(os.environ, UWJIT_CACHE_DIR=str(tmp_path / "cache"))
    child = subprocess.Popen([sys.executable, str(EXAMPLE), "--steps", "100000000", "--output",
                              tmp_path, "--checkpoint", tmp_path / "stopped.ckpt"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in child.stdout:  # the kernel line comes just before the first step
        lines.append(line)
        if line.startswith("  diffuse  "):
            break
    child.send_signal(signal.SIGINT)
    out = "".join(lines) + child.stdout.read()
    assert child.wait(timeout=240) == 130, child.stderr.read()
    assert "interrupted by SIGINT after step " in out
    assert (tmp_path / "stopped.ckpt").stat().st_size > 0


def steps_then(event):
    """A default run length that tells `event` when the run is about to step."""
    def default_steps(node):
        event.set()
        return 10 ** 9
    return default_steps


def test_in_process_the_gil_is_released_while_stepping_and_ctrl_c_stops_after_a_step(
        tmp_path, capfd, monkeypatch):
    # The other thread can only send the signal if the run lets go of the GIL while it steps.
    stepping = threading.Event()
    kind = uwjit.NodeKind("diffuse", "2-D diffusion", {"nx": 8, "ny": 8, "rate": 0.2},
                          diffuse_cli.make_diffuse, default_steps=steps_then(stepping))
    sender = threading.Thread(target=lambda: (stepping.wait(), os.kill(os.getpid(),
                                                                       signal.SIGINT)))
    sender.start()
    monkeypatch.setenv("UWJIT_CACHE_DIR", str(tmp_path / "cache"))
    code = uwjit.run_cli(kind, ["--output", str(tmp_path)], program="diffuse")
    sender.join()
    assert code == 130
    assert "interrupted by SIGINT after step " in capfd.readouterr().out
    # Python's own handler is back: Ctrl-C is a KeyboardInterrupt again.
    with pytest.raises(KeyboardInterrupt):
        signal.raise_signal(signal.SIGINT)


def test_a_kind_without_a_run_length_needs_steps_and_one_without_a_check_is_not_judged(
        tmp_path, capfd, monkeypatch):
    monkeypatch.setenv("UWJIT_CACHE_DIR", str(tmp_path / "cache"))
    kind = uwjit.NodeKind("plain", "2-D diffusion, nothing more", {"nx": 8, "ny": 8, "rate": 0.2},
                          diffuse_cli.make_diffuse)
    assert uwjit.run_cli(kind, ["--output", str(tmp_path)], program="plain") == 2
    assert ('plain: error: --steps: node kind "plain" has no default run length; give --steps N'
            in capfd.readouterr().err)
    assert uwjit.run_cli(kind, ["--steps", "3", "--output", str(tmp_path)], program="plain") == 0
    assert 'check: not judged: node kind "plain" has no physics check\n' in capfd.readouterr().out


def test_the_report_shows_a_param_s_control_bytes_as_text(tmp_path, capfd, monkeypatch):
    # A param's value may come from a checkpoint anyone could write: the report never sends its
    # control bytes to the terminal.
    monkeypatch.setenv("UWJIT_CACHE_DIR", str(tmp_path / "cache"))
    kind = uwjit.NodeKind("tagged", "2-D diffusion with a label",
                          {"nx": 8, "ny": 8, "rate": 0.2, "label": "plain"},
                          diffuse_cli.make_diffuse)
    argv = ["--steps", "3", "--set", "label=\x1b]0;retitled\x07", "--output", str(tmp_path)]
    assert uwjit.run_cli(kind, argv, program="tagged") == 0
    out = capfd.readouterr().out
    assert "label=\\x1b]0;retitled\\x07" in out, out
    assert not any(ord(c) < 0x20 and c not in "\n\t" for c in out), out


def test_an_exception_of_the_node_s_own_code_is_raised_again(tmp_path):
    def make(type, name, node_params):
        raise RuntimeError("no such node here")
    kind = uwjit.NodeKind("broken", "a kind that cannot make its node", {"n": 1}, make)
    with pytest.raises(RuntimeError, match="no such node here"):
        uwjit.run_cli(kind, ["--steps", "1", "--output", str(tmp_path)])


def test_node_kinds_and_what_a_check_reads_have_docstrings_and_reprs():
    kind = diffuse_cli.KIND
    assert repr(kind) == "NodeKind(type='diffuse', summary='2-D diffusion on a periodic grid')"
    assert kind.node_params == {"nx": 32, "ny": 16, "rate": 0.2}
    # Its check reads a rank's slab; a kind that does not say so gets the whole domain.
    assert kind.reads_slabs
    assert not uwjit.NodeKind("plain", "p", {"n": 1}, lambda t, n, p: None).reads_slabs
    assert repr(kind.param_docs[0]) == "ParamDoc('nx', 'cells along x', unit='cells', range='[1, 4096]')"
    verdict = uwjit.Verdict()
    verdict.add("m", "metric", 2.0, 1.0)
    assert not verdict.passed and repr(verdict) == "Verdict(passed=False, measurements=1)"
    assert repr(verdict.measurements[0]) == "Measurement('m', value=2.0, limit=1.0, passed=False)"
    for name in ["NodeKind", "ParamDoc", "Verdict", "Measurement", "Trace", "Snapshot", "run_cli"]:
        assert getattr(uwjit, name).__doc__, name
    with pytest.raises(TypeError, match="expected a uwjit.NodeKind"):
        uwjit.run_cli("diffuse", [])
