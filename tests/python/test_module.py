"""The module itself: its version, its documentation and its type stub."""

import ast
import pathlib

import pytest

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


def test_no_class_can_be_made_by_new_alone():
    # An object whose C++ value was never constructed would hand its methods raw memory (a
    # crash in repr); every bound class refuses it with a TypeError that says what to call
    # instead (uwjit.State, a dict of Python's own, has nothing to leave unset).
    bound = type(uwjit.Layout)
    classes = [value for name, value in vars(uwjit).items()
               if type(value) is bound and not name.startswith("_")]
    assert uwjit.Layout in classes and uwjit.Node in classes and len(classes) > 15
    for cls in classes:
        with pytest.raises(TypeError, match=r"cannot be made by __new__ alone.*call uwjit\."
                                            + cls.__name__):
            cls.__new__(cls)
    # Made as users make them, they are unchanged, a Python subclass of Node included.
    layout = uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")])
    assert repr(layout).startswith("Layout(")

    class Flat(uwjit.Node):
        def __init__(self):
            super().__init__("flat", "flat", {"n": 4})

        def layout(self):
            return uwjit.Layout(uwjit.grid([4]), [uwjit.StateField("u")])

        def initial_state(self, state):
            state["u"][...] = 2.0

        def emit_update(self, writer):
            writer.state_out("u")
            writer.body("for (uw_i64 i = 0; i < nx; ++i) { u_out(i) = u(i) * 0.5; }")

    sim = uwjit.Simulation(uwjit.Engine(disk_cache=False), [Flat()])
    sim.run(1)
    assert list(sim.field("flat", "u")) == [1.0] * 4
    # A subclass's __new__ alone is refused too; made by its class, it works as before.
    with pytest.raises(TypeError, match=r"Flat cannot be made by __new__ alone.*call Flat\("):
        Flat.__new__(Flat)
    assert Flat().name == "flat"

    class Unfinished(uwjit.Node):
        def __init__(self):
            pass

    with pytest.raises(TypeError, match="__init__"):
        Unfinished()


def test_the_errors_form_one_family():
    kinds = [uwjit.UsageError, uwjit.IoError, uwjit.CompileError, uwjit.JitError,
             uwjit.CollectiveError, uwjit.InternalError, uwjit.KernelError]
    assert all(issubclass(k, uwjit.Error) for k in kinds)
    assert issubclass(uwjit.Error, RuntimeError)
    assert issubclass(uwjit.UsageError, ValueError)


def _public_members(cls):
    """The names a user of `cls` sees: its own attributes, neither private nor inherited from
    object or the pybind11 machinery."""
    for name, value in vars(cls).items():
        # __init__ is described by the class's own docstring, which help() shows first
        if name.startswith("_") and name != "__call__":
            continue
        yield name, value


def _doc_of(value):
    if isinstance(value, property):
        return value.__doc__ or (value.fget.__doc__ if value.fget else None)
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__.__doc__
    return getattr(value, "__doc__", None)


def _says_more_than_its_signature(doc):
    """pybind11 writes a bare signature ("grid(cells: list[int], ...) -> list") as the docstring
    of a function given none: a docstring must have a line of prose besides."""
    lines = [line.strip() for line in (doc or "").splitlines() if line.strip()]
    prose = [line for line in lines if not (line.endswith(")") or " -> " in line)
             and not line.startswith("Overloaded function") and not line[:2].rstrip(".").isdigit()]
    return bool(prose)


def test_every_public_class_member_has_a_docstring():
    undocumented = []
    for name in uwjit.__all__:
        value = getattr(uwjit, name)
        if not isinstance(value, type) or issubclass(value, BaseException):
            continue
        for member, attribute in _public_members(value):
            if callable(attribute) or isinstance(attribute, (property, staticmethod, classmethod)) \
                    or type(attribute).__name__ in ("instancemethod", "builtin_function_or_method"):
                if not _says_more_than_its_signature(_doc_of(attribute)):
                    undocumented.append(f"{name}.{member}")
    assert undocumented == []


def test_every_public_function_says_more_than_its_signature():
    bare = [name for name in uwjit.__all__
            if callable(getattr(uwjit, name)) and not isinstance(getattr(uwjit, name), type)
            and not _says_more_than_its_signature(getattr(uwjit, name).__doc__)]
    assert bare == []


def test_help_on_grid_says_what_it_makes_and_its_arguments():
    doc = uwjit.grid.__doc__
    for word in ("DomainAxis", "halo", "boundary", "extent", "periodic"):
        assert word in doc


def test_the_stub_documents_every_public_name():
    stub = pathlib.Path(uwjit.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text())
    documented = set()
    for item in tree.body:
        if isinstance(item, (ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(item):
            documented.add(item.name)
    public = {name for name in uwjit.__all__ if callable(getattr(uwjit, name))}
    assert sorted(public - documented) == []


def test_values_print_what_they_hold_not_an_address():
    values = [
        uwjit.Layout(uwjit.grid([4, 5], halo=1), [uwjit.StateField("u")], integrals=["total"]),
        uwjit.StateField("f", "f32", [19]),
        uwjit.DomainAxis(8, halo=2, boundary="periodic"),
        uwjit.BoundaryFace.dirichlet(1.5),
        uwjit.Boundary(low=uwjit.BoundaryFace.edge(), high=uwjit.BoundaryFace.neumann(0.0)),
        uwjit.Source("extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* a) { return 0; }",
                     state_out=["y"]),
        uwjit.StaticArray(2.0),
        uwjit.NodeInput("pipe", "f"),
    ]
    for value in values:
        text = repr(value)
        assert " at 0x" not in text and text.startswith(type(value).__name__), text
    assert repr(uwjit.StateField("f", "f32", [19])) == "StateField('f', 'f32', components=[19])"
    assert "dirichlet(1.5)" in repr(uwjit.BoundaryFace.dirichlet(1.5))


def test_kernel_info_prints_its_key_and_tier(engine):
    kernel = engine.kernel(
        "extern \"C\" int __UWJIT_ENTRY__(const uwjit_kernel_args* a) { return 0; }")
    text = repr(kernel.info)
    assert text.startswith("KernelInfo(") and kernel.info.key in text and "compiled" in text
