"""One Simulation used from several threads (its calls take turns), and Ctrl-C during a long
step() or run() (it stops after the current step with KeyboardInterrupt)."""

import os
import signal
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import uwjit


def in_threads(*targets):
    """Runs each target in its own thread, all released at once; re-raises the first failure."""
    start = threading.Barrier(len(targets))
    failures = []

    def run(target):
        start.wait()
        try:
            target()
        except BaseException as error:  # noqa: B036 (reported below)
            failures.append(error)

    threads = [threading.Thread(target=run, args=(t,)) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise failures[0]


def pipe():
    return uwjit.node("pipe-flow", size=[12])


def test_three_threads_stepping_one_simulation_take_the_steps_one_call_at_a_time(engine):
    shared = uwjit.Simulation(engine, [pipe()], threads=1)

    def steps():
        for _ in range(100):
            shared.step()

    in_threads(steps, steps, steps)
    serial = uwjit.Simulation(engine, [pipe()], threads=1)
    serial.step(300)
    assert shared.steps_taken == 300
    np.testing.assert_array_equal(shared.field("pipe-flow", "f"), serial.field("pipe-flow", "f"))
    assert shared.integrals("pipe-flow") == serial.integrals("pipe-flow")


class Weighted(uwjit.Node):
    """u <- 0.5 * (u + w), w a static array."""

    def __init__(self, name, n):
        super().__init__("weighted", name, {"n": n})

    def layout(self):
        return uwjit.Layout(uwjit.grid([self.params["n"]]), [uwjit.StateField("u")],
                            integrals=["total"])

    def build_static_data(self):
        return {"w": uwjit.StaticArray(np.linspace(0.0, 1.0, self.params["n"]))}

    def initial_state(self, state):
        state["u"][...] = 1.0

    def emit_update(self, writer):
        writer.state_out("u")
        writer.static_array("w")
        writer.integral("total")
        writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = 0.5 * (u(i) + w(i));"
                    " total += u_out(i); }")


def test_stepping_while_another_thread_rebinds_static_arrays_is_safe(engine):
    n = 20_000
    sim = uwjit.Simulation(engine, [Weighted("w", n)], threads=1)
    same = np.linspace(0.0, 1.0, n)

    def step():
        for _ in range(2000):
            sim.step()

    def rebind():
        for _ in range(2000):
            # A new array of the same contents each time: the state cannot depend on the order.
            rebound = sim.rebind_static("w", "w", uwjit.StaticArray(same.copy()))
            assert rebound["new_kernel"] is False

    in_threads(step, rebind)
    serial = uwjit.Simulation(engine, [Weighted("w", n)], threads=1)
    serial.step(2000)
    np.testing.assert_array_equal(sim.field("w", "u"), serial.field("w", "u"))
    assert sim.integrals("w") == serial.integrals("w")


def test_a_run_callback_may_use_the_simulation_while_another_thread_waits_for_it(engine):
    sim = uwjit.Simulation(engine, [uwjit.node("heat", size=[6])], threads=1)
    seen = []

    def callback(s):
        seen.append((s.steps_taken, float(s.field("heat", "u").sum()), s.integrals("heat")["heat"]))

    in_threads(lambda: sim.run(5, callback), lambda: sim.step(5))
    assert sim.steps_taken == 10
    # The callback ran after each of its own steps, with no step of the other thread between.
    taken = [s for s, _, _ in seen]
    assert taken == list(range(taken[0], taken[0] + 5))
    assert all(total == pytest.approx(integral, rel=1e-12) for _, total, integral in seen)


# A child that calls a long step() (or run()) and is sent SIGINT while it steps: it says
# "stepping" from a second thread, which can run only once the main thread has released the GIL
# inside the call (with so long a switch interval, the main thread never gives it up otherwise).
INTERRUPTED = textwrap.dedent("""
    import signal, sys, threading
    import uwjit
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.setswitchinterval(1000)
    how, count = sys.argv[1], int(sys.argv[2])
    sim = uwjit.Simulation(uwjit.Engine(cache_dir=sys.argv[3]), [uwjit.node("heat", size=[8])],
                           threads=1)
    sim.step()
    go = threading.Lock()
    go.acquire()

    def announce():
        with go:
            print("stepping", flush=True)

    threading.Thread(target=announce).start()
    before = sim.steps_taken
    try:
        go.release()
        if how == "step":
            sim.step(count)
        else:
            sim.run(count)
    except KeyboardInterrupt:
        print("interrupted", sim.steps_taken - before, flush=True)
    else:
        print("finished", sim.steps_taken - before, flush=True)
""")


@pytest.mark.parametrize("how", ["step", "run"])
def test_ctrl_c_stops_a_long_call_after_the_current_step(how, cache_dir):
    count = 1_000_000
    child = subprocess.Popen([sys.executable, "-c", INTERRUPTED, how, str(count), str(cache_dir)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "stepping\n"
        child.send_signal(signal.SIGINT)
        word, taken = child.stdout.readline().split()
        assert child.wait(timeout=600) == 0
    finally:
        if child.poll() is None:
            child.kill()
    assert word == "interrupted"
    assert 0 < int(taken) < count
