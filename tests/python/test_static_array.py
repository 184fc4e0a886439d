"""StaticArray's strict rules and static_data_hash's agreement with C++."""

import os
import subprocess

import numpy as np
import pytest

import uwjit


@pytest.mark.parametrize("value", [[1.0, 2.0], (1.0, 2.0), {"a": 1}, {1.0, 2.0}, "text", True,
                                   None])
def test_anything_but_a_numpy_array_or_a_number_is_a_type_error(value):
    with pytest.raises(TypeError, match="must be a numpy.ndarray .or a float or int"):
        uwjit.StaticArray(value)


@pytest.mark.parametrize("kwargs, words", [
    (dict(replication="mirror"), 'unknown replication "mirror"'),
    (dict(replication="shard"), "shard_axis"),
    (dict(replication="replicate", shard_axis=0), "shard_axis"),
    (dict(replication="shard", shard_axis=2), "shard_axis"),
    (dict(replication="shard", shard_axis=-1), "shard_axis"),
])
def test_distribution_rules_are_value_errors(kwargs, words):
    with pytest.raises(ValueError, match=words):
        uwjit.StaticArray(np.zeros((3, 4)), **kwargs)


def test_unsupported_layouts_and_dtypes():
    with pytest.raises(TypeError, match="unsupported dtype"):
        uwjit.StaticArray(np.zeros(3, dtype=np.complex64))
    with pytest.raises(ValueError, match="C-contiguous"):
        uwjit.StaticArray(np.zeros((4, 4)).T)
    with pytest.raises(ValueError):
        uwjit.StaticArray(np.zeros(0))


def test_the_array_is_shared_not_copied_and_kept_alive():
    value = np.arange(6.0).reshape(2, 3)
    array = uwjit.StaticArray(value, replication="shard", shard_axis=1)
    assert array.value is value
    assert (array.dtype, array.shape, array.replication, array.shard_axis) == (
        "f64", (2, 3), "shard", 1)
    del value
    np.testing.assert_array_equal(array.value, np.arange(6.0).reshape(2, 3))


def test_static_data_hash_is_the_one_of_cpp():
    helper = os.environ.get("UWJIT_STATIC_DATA_HASH_HELPER")
    if not helper:
        pytest.fail("UWJIT_STATIC_DATA_HASH_HELPER is not set (ctest sets it)")
    expected = subprocess.run([helper], check=True, capture_output=True, text=True).stdout.strip()
    # The declarations of tests/unit/static_data_sample.hpp; the contents do not matter.
    data = {
        "pipe_wall": uwjit.StaticArray(np.ones((4, 5, 6), dtype=np.uint8), "shard", 0),
        "mesh_area": uwjit.StaticArray(np.full(10, 123.0)),
        "owner": uwjit.StaticArray(np.zeros(10, dtype=np.int32)),
        "N_cells": 10,
        "ratio": 0.1,
        "name": "pipe",
        "cartesian_shape": (4, 5, 6.5, "x"),
    }
    assert uwjit.static_data_hash(data) == expected
    assert uwjit.static_data_hash({}) == "0"


def test_static_data_refuses_bare_arrays_and_bools():
    with pytest.raises(TypeError, match="uwjit.StaticArray"):
        uwjit.static_data_hash({"w": np.zeros(3)})
    with pytest.raises(TypeError, match="bool"):
        uwjit.static_data_hash({"flag": True})
