"""The docstrings' examples and the book chapter's code blocks run as written."""

from __future__ import annotations

import doctest
import os
import re
import warnings

import privq
import privq._frames

from conftest import ROOT

CHAPTER = ROOT / "docs" / "src" / "python.md"


def test_docstring_examples():
    for module in (privq, privq._frames, privq.ldp, privq.stats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", privq.SeedWarning)
            result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
    assert doctest.testmod(privq).attempted >= 10


def test_the_chapter_quick_start_runs(tmp_path):
    text = CHAPTER.read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) >= 2, "the chapter has its quick start in ```python blocks"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        namespace: dict = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", privq.SeedWarning)
            for block in blocks:
                exec(compile(block, str(CHAPTER), "exec"), namespace)
    finally:
        os.chdir(cwd)
