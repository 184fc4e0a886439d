"""The module itself: its version, its documentation and its type stub."""

import ast
import pathlib

import uwjit


def test_the_version_is_the_librarys():
    assert uwjit.__version__.count(".") == 2


def test_every_public_name_is_documented_and_in_the_stub():
    stub = pathlib.Path(uwjit.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text())
    declared = set()
    for item in tree.body:
        if isinstance(item, (ast.ClassDef, ast.FunctionDef)):
            declared.add(item.name)
        elif isinstance(item, ast.AnnAssign):
            declared.add(item.target.id)
        elif isinstance(item, ast.Assign):
            declared.update(t.id for t in item.targets)
    missing = [name for name in uwjit.__all__ if name not in declared]
    assert missing == []
    undocumented = [name for name in uwjit.__all__
                    if callable(getattr(uwjit, name)) and not getattr(uwjit, name).__doc__]
    assert undocumented == []


def test_every_public_method_and_property_of_every_class_is_documented():
    undocumented = []
    for name in uwjit.__all__:
        cls = getattr(uwjit, name)
        if not isinstance(cls, type) or issubclass(cls, BaseException):
            continue
        for attribute, value in vars(cls).items():
            if attribute.startswith("_"):
                continue
            if not (getattr(value, "__doc__", None) or "").strip():
                undocumented.append("%s.%s" % (name, attribute))
    assert undocumented == []


def test_every_public_class_has_a_repr_of_its_own():
    # Made the way a user makes them; a default repr says only "<uwjit._uwjit.X object at ...>".
    engine = uwjit.Engine(disk_cache=False)
    node = uwjit.node("heat", size=[4, 4, 4])
    sim = uwjit.Simulation(engine, [node])
    writer = uwjit.KernelWriter("k")
    extent = writer.domain_extent(0, "nx", 4)
    writer.state_in("u", "f64", [extent])
    writer.state_out("u")
    writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i); }")
    source = writer.finish()
    kernel = engine.kernel(source)
    samples = [engine, node, sim, writer, extent, uwjit.Axis(extent), source, kernel, kernel.info,
               sim.kernel_reports()[0], uwjit.StaticArray(1.0), uwjit.BoundaryFace.edge(),
               uwjit.Boundary.periodic(), uwjit.DomainAxis(4), uwjit.StateField("u"),
               uwjit.NodeInput("a", "u"), node.layout(), sim.gathered(), uwjit.Verdict(),
               uwjit.ParamDoc("n", "cells")]
    defaults = [type(x).__name__ for x in samples if " object at 0x" in repr(x)]
    assert defaults == []


def test_the_errors_form_one_family():
    kinds = [uwjit.UsageError, uwjit.IoError, uwjit.CompileError, uwjit.JitError,
             uwjit.CollectiveError, uwjit.InternalError, uwjit.KernelError]
    assert all(issubclass(k, uwjit.Error) for k in kinds)
    assert issubclass(uwjit.Error, RuntimeError)
    assert issubclass(uwjit.UsageError, ValueError)
