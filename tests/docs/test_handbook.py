"""The handbook (docs/handbook/) is checked like code.

Every ```python block of a page is a doctest and runs here, the blocks of one page in one
namespace, in order; a changed output fails.  Every ```c block is a verbatim excerpt of a
source file the page links.  Every relative link points at a path that exists, every page
links some source, and the index links every page."""
import doctest
import gc
import io
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HANDBOOK = os.path.join(ROOT, "docs", "handbook")
PAGES = sorted(f for f in os.listdir(HANDBOOK) if f.endswith(".md"))

FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def read(page):
    with open(os.path.join(HANDBOOK, page), encoding="utf-8") as f:
        return f.read()


def blocks(text):
    """(language, body, line number of the body's first line) of every fenced block."""
    for m in FENCE.finditer(text):
        yield m.group(1), m.group(2), text.count("\n", 0, m.start(2))


def local_links(text):
    """Relative link targets, without their #fragment (text in code blocks is no link: a
    graph prints `prim::GetAttr[name="fc1"](%self.1)`)."""
    for target in LINK.findall(FENCE.sub("", text)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        yield target.split("#", 1)[0]


def test_pages_exist():
    assert "README.md" in PAGES
    assert len(PAGES) > 1


@pytest.mark.parametrize("page", PAGES)
def test_code_blocks_are_python_doctests_or_c_excerpts(page):
    for lang, body, line in blocks(read(page)):
        assert lang in ("python", "c"), f"{page}:{line + 1}: a ```{lang} block runs nowhere"
        if lang == "python":
            assert ">>> " in body, f"{page}:{line + 1}: a python block without doctest examples"


@pytest.mark.parametrize("page", PAGES)
def test_doctests(page):
    text = read(page)
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.REPORT_NDIFF)
    globs = {"__name__": "handbook_" + page[:-3].replace("-", "_")}
    report = io.StringIO()
    ran = 0
    # Pages read process-wide counters (allocator statistics, live objects) as differences:
    # garbage of earlier tests must not be collected in the middle of a page.
    gc.collect()
    gc.disable()
    try:
        for lang, body, line in blocks(text):
            if lang != "python":
                continue
            test = parser.get_doctest(body, globs, page, os.path.join(HANDBOOK, page), line)
            result = runner.run(test, out=report.write, clear_globs=False)
            ran += result.attempted
            globs = test.globs   # DocTest copies its globals; the next block goes on from these
    finally:
        gc.enable()
    if runner.failures:
        pytest.fail(report.getvalue(), pytrace=False)
    if page != "README.md":
        assert ran > 0, f"{page} has no examples"


@pytest.mark.parametrize("page", PAGES)
def test_links_exist(page):
    text = read(page)
    for target in local_links(text):
        path = os.path.normpath(os.path.join(HANDBOOK, target))
        assert os.path.exists(path), f"{page}: the link {target} points at nothing"


@pytest.mark.parametrize("page", PAGES)
def test_page_links_source(page):
    sources = [t for t in local_links(read(page))
               if os.path.normpath(os.path.join(HANDBOOK, t)).startswith(
                   (os.path.join(ROOT, "src"), os.path.join(ROOT, "pytorchlite")))]
    assert sources, f"{page} links no file under src/ or pytorchlite/"


@pytest.mark.parametrize("page", PAGES)
def test_c_blocks_are_excerpts(page):
    text = read(page)
    files = [os.path.normpath(os.path.join(HANDBOOK, t)) for t in local_links(text)]
    sources = []
    for f in files:
        if os.path.isfile(f):
            with open(f, encoding="utf-8") as fh:
                sources.append(fh.read())
    for lang, body, line in blocks(text):
        if lang == "c":
            assert any(body in s for s in sources), \
                f"{page}:{line + 1}: the C block is not a verbatim excerpt of a linked file"


def test_index_links_every_page():
    linked = {os.path.normpath(t) for t in local_links(read("README.md"))}
    missing = [p for p in PAGES if p != "README.md" and p not in linked]
    assert not missing, f"docs/handbook/README.md does not link {missing}"


def test_project_readme_links_handbook():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        assert "docs/handbook/README.md" in f.read()
