"""A read-only site cache (UWJIT_CACHE_SITE_DIR) beside an engine's own cache: a kernel warmed
into it serves a later engine, which compiles nothing and writes nothing there."""

import os

import uwjit

from conftest import axpb


def files_of(directory):
    return {name: (os.stat(directory / name).st_mtime_ns, (directory / name).read_bytes())
            for name in sorted(os.listdir(directory))}


def test_a_kernel_in_a_read_only_site_cache_serves_an_engine_that_writes_nothing_there(
        tmp_path, monkeypatch):
    site = tmp_path / "site"
    key = axpb(uwjit.Engine(cache_dir=site)).info.key  # warmed by the site's keeper
    for name in os.listdir(site):
        os.chmod(site / name, 0o444)
    os.chmod(site, 0o555)
    before = files_of(site)
    monkeypatch.setenv("UWJIT_CACHE_SITE_DIR", str(site))
    engine = uwjit.Engine(cache_dir=tmp_path / "mine")
    assert [str(d) for d in engine.site_cache_dirs] == [str(site)]
    info = axpb(engine).info
    assert (info.key, info.tier, info.served_from) == (key, "disk", str(site))
    assert engine.stats()["compiles"] == 0 and engine.stats()["site_hits"] == 1
    assert files_of(site) == before
    assert not [n for n in os.listdir(tmp_path / "mine") if n.startswith(key)]
    # Without it, the engine compiles.
    monkeypatch.delenv("UWJIT_CACHE_SITE_DIR")
    other = uwjit.Engine(cache_dir=tmp_path / "other")
    assert other.site_cache_dirs == [] and axpb(other).info.tier == "compiled"
