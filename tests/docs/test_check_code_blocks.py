"""The code-block checker itself: what it refuses, on small pages made for each case."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

import check_code_blocks as checker  # noqa: E402


def problems_of(tmp_path, text, files=None):
    (tmp_path / "page.md").write_text(text)
    for name, content in (files or {}).items():
        (tmp_path / name).write_text(content)
    problems = []
    blocks = checker.blocks_of(str(tmp_path), "page.md", problems)
    config = {}
    verdicts = [checker.check(b, config, str(tmp_path)) for b in blocks
                if b.marker or b.lang in checker.TRANSCRIPTS | checker.DIRECTIVES or
                b.lang not in checker.SHELLS | {"python", "cpp", "c++"}]
    return problems, verdicts


def test_a_fence_closed_by_backticks_with_text_after_them_swallows_what_follows(tmp_path):
    # as the Embedding example's fence once did, swallowing the "Python" heading
    page = "```cpp\nint x;\n``` and a sentence\n\n## Python\n\n```sh\necho hi\n```\n"
    problems, _ = problems_of(tmp_path, page)
    assert any("page.md:7: a fence line inside the block opened at line 1" in p for p in problems)


def test_a_fence_never_closed_is_refused(tmp_path):
    problems, _ = problems_of(tmp_path, "text\n\n```python\nprint(1)\n\n## Heading\n")
    assert any("page.md:3: the fence opened here is never closed" in p for p in problems)


def test_a_file_block_must_equal_its_file(tmp_path):
    page = "<!-- file: a.cpp -->\n```cpp\nint a;\n```\n"
    assert problems_of(tmp_path, page, {"a.cpp": "int a;\n"})[1] == [("pass", "equals a.cpp")]
    verdict = problems_of(tmp_path, page, {"a.cpp": "int b;\n"})[1][0]
    assert verdict == ("fail", "differs from a.cpp")


def test_an_excerpt_must_be_lines_of_its_file_in_order(tmp_path):
    page = "<!-- excerpt: a.cmake -->\n```cmake\nfirst()\nthird()\n```\n"
    files = {"a.cmake": "first()\n  second()\n  third()\n"}
    assert problems_of(tmp_path, page, files)[1][0][0] == "pass"
    page = "<!-- excerpt: a.cmake -->\n```cmake\nthird()\nfirst()\n```\n"
    assert problems_of(tmp_path, page, files)[1][0][0] == "fail"


def test_a_block_that_cannot_run_needs_a_marker(tmp_path):
    verdict = problems_of(tmp_path, "```cmake\nfind_package(uwjit)\n```\n")[1][0]
    assert verdict[0] == "fail" and "must be marked" in verdict[1]


def test_not_run_takes_only_the_accepted_reasons(tmp_path):
    good = "<!-- not run: needs an NVIDIA GPU -->\n```sh\nuwjit run heat --device cuda\n```\n"
    assert problems_of(tmp_path, good)[1][0] == ("not run", "needs an NVIDIA GPU")
    bad = "<!-- not run: too slow -->\n```sh\nuwjit run heat\n```\n"
    assert problems_of(tmp_path, bad)[1][0][0] == "fail"


def test_a_cpp_block_without_main_must_be_a_file_or_an_excerpt(tmp_path):
    (tmp_path / "page.md").write_text("```cpp\nint f();\n```\n")
    [block] = checker.blocks_of(str(tmp_path), "page.md", [])
    verdict = checker.check(block, {}, str(tmp_path))
    assert verdict[0] == "fail" and "without main()" in verdict[1]
