"""A node's kernels outside a simulation, and GPU targets from Python: PTX compiled and cached
without a GPU."""

import pytest

import uwjit

from test_python_node import Relax, RelaxCells


def test_a_nodes_kernels_are_the_ones_its_simulation_requests(engine):
    node = uwjit.node("heat", size=[8, 6, 5])
    [source] = uwjit.node_kernels(node)
    sim = uwjit.Simulation(engine, [node])
    assert engine.key_of(source) == sim.kernel_reports()[0].info.key
    # Called directly, its arrays are checked against what the node declared.
    kernel = engine.kernel(source)
    assert kernel.slots["statics"] == ["face_x", "face_y", "face_z"]


def test_a_nodes_gpu_kernel_compiles_to_ptx_and_is_cached(engine, cache_dir):
    [source] = uwjit.node_kernels(uwjit.node("pipe-flow", size=[8, 9, 10]), gpu=True)
    text, info = engine.ptx(source, "cuda:sm_90")
    assert info.tier == "compiled" and info.entry in text
    assert ".target sm_90" in text and "shfl.sync.down.b32" in text
    assert (cache_dir / f"{info.key}.ptx").read_text() == text
    [(again, info_again)] = engine.ptx([source], "cuda:sm_90")
    assert again == text and info_again.tier == "memory"
    assert uwjit.Engine(cache_dir=cache_dir).ptx(source, "cuda:sm_90")[1].tier == "disk"


def test_a_python_node_in_the_cell_form_has_a_gpu_form_and_one_with_loops_is_refused(engine):
    [source] = uwjit.node_kernels(RelaxCells("r", 6, 5, 0.25), gpu=True)
    text, _ = engine.ptx(source, "cuda:sm_80")
    assert ".target sm_80" in text
    with pytest.raises(uwjit.UsageError, match=r"it writes its own loops \(body\(\)\), which run "
                                               r"on CPUs only"):
        uwjit.node_kernels(Relax("r", 6, 5, 0.25), gpu=True)


def test_bad_targets_are_usage_errors(engine):
    [source] = uwjit.node_kernels(uwjit.node("heat", size=[8, 6, 5]), gpu=True)
    with pytest.raises(uwjit.UsageError, match="is not a GPU target"):
        engine.ptx(source, "host")
    with pytest.raises(uwjit.UsageError, match="expected host or cuda:sm_XX"):
        engine.ptx(source, "cuda:sm_9")
    with pytest.raises(TypeError, match="each source must be a uwjit.Source"):
        engine.ptx(["text"], "cuda:sm_90")

def test_a_simulation_names_its_device_and_a_missing_gpu_is_one_clear_error(engine):
    import ctypes

    node = uwjit.node("heat", size=[6, 5, 4])
    assert uwjit.Simulation(engine, [node]).device == "cpu"
    with pytest.raises(uwjit.UsageError, match=r'device "gpu": expected "cpu", "cuda"'):
        uwjit.Simulation(engine, [node], device="gpu")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        with pytest.raises(uwjit.UsageError, match=r"no NVIDIA driver: libcuda\.so\.1 could not "
                                                   r"be loaded"):
            uwjit.Simulation(engine, [node], device="cuda")
