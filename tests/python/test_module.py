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


def test_the_errors_form_one_family():
    kinds = [uwjit.UsageError, uwjit.IoError, uwjit.CompileError, uwjit.JitError,
             uwjit.CollectiveError, uwjit.InternalError, uwjit.KernelError]
    assert all(issubclass(k, uwjit.Error) for k in kinds)
    assert issubclass(uwjit.Error, RuntimeError)
    assert issubclass(uwjit.UsageError, ValueError)
