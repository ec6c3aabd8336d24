"""The documentation site: it builds strictly, its reference pages are current, and a reader
finds nothing broken.

`mkdocs build --strict` fails on a broken link or a page missing from the navigation. The
site is then served locally and checked as a reader would meet it: every internal link and
asset answers, and in headless Chromium (Debian's `chromium`) every mermaid diagram renders
as an SVG, with no mermaid error box (the ```mermaid fences become `div.diagram`, which
docs/assets/javascripts/diagrams.js renders with the vendored mermaid).
"""

from __future__ import annotations

import concurrent.futures
import functools
import html.parser
import http.server
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> pathlib.Path:
    site_dir = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return site_dir


@pytest.fixture(scope="module")
def served(site):
    handler = functools.partial(QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


class Links(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []

    def handle_starttag(self, tag, attrs) -> None:
        for name, value in attrs:
            if name in ("href", "src") and value and tag in ("a", "link", "script", "img"):
                self.links.append(value)


def test_docs_build_strict(site):
    assert (site / "log" / "index.html").exists()
    assert (site / "groups" / "index.html").exists()


def test_every_internal_link_and_asset_answers(served):
    seen, queue, broken = set(), [served], []
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                body = response.read()
                kind = response.headers.get_content_type()
        except urllib.error.HTTPError as err:
            broken.append(f"{url}: {err.code}")
            continue
        if kind != "text/html":
            continue
        parser = Links()
        parser.feed(body.decode("utf-8", "replace"))
        for link in parser.links:
            target = urllib.parse.urldefrag(urllib.parse.urljoin(url, link))[0]
            if target.startswith(served) and target not in seen:
                queue.append(target)
    assert len(seen) > 30, "the crawl should reach every page of the site"
    assert not broken, broken


def pages_with_diagrams(site: pathlib.Path) -> list[str]:
    return sorted(
        str(page.parent.relative_to(site)) + "/"
        for page in site.rglob("index.html")
        if '<div class="diagram">' in page.read_text()
    )


def nav_pages(node) -> list[str]:
    """Every page (a .md path) under a node of mkdocs.yml's nav, in order."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [page for value in node.values() for page in nav_pages(value)]
    return [page for item in node for page in nav_pages(item)]


def concept_pages() -> list[str]:
    """The nav's Concepts section, and the conformance suite's page: one page per concept."""
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)["nav"]
    concepts = next(item["Concepts"] for item in nav if "Concepts" in item)
    return [*nav_pages(concepts), "conformance.md"]


def test_every_concept_page_has_a_diagram_its_rules_and_its_code():
    pages = concept_pages()
    assert len(pages) >= 11, pages
    texts = {page: (ROOT / "docs" / page).read_text() for page in pages}
    for part, what in [
        ("```mermaid\n", "a mermaid diagram of a flow or states"),
        ("{{ rules ", "its spec rules embedded"),
        ("{{ code ", "its code embedded from the source"),
    ]:
        missing = [page for page, text in texts.items() if part not in text]
        assert not missing, f"concept pages without {what}: {missing}"


def test_mermaid_diagrams_render_in_headless_chromium(site, served, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "chromium is missing: `make test` installs it (apt-get install chromium)"
    pages = pages_with_diagrams(site)
    unvisited = {p.removesuffix(".md") + "/" for p in concept_pages()} - set(pages)
    assert not unvisited, f"concept pages whose diagrams are not rendered: {unvisited}"

    def dom_of(index: int, page: str) -> str:
        return subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                f"--user-data-dir={tmp_path / f'profile-{index}'}",
                "--virtual-time-budget=15000",
                "--dump-dom",
                served + page,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout

    # A few pages at a time, each Chromium with a profile of its own: a headless Chromium
    # spends most of its run starting and waiting, not rendering.
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        doms = list(pool.map(dom_of, range(len(pages)), pages))
    for page, dom in zip(pages, doms, strict=True):
        expected = (site / page / "index.html").read_text().count('<div class="diagram">')
        rendered = len(re.findall(r'<div class="diagram" data-processed="true"><svg ', dom))
        assert rendered == expected, f"{page}: {rendered} of {expected} diagrams rendered"
        assert "Syntax error in text" not in dom, f"{page}: a diagram has a mermaid error"


@pytest.mark.spec("CONF-5")
def test_the_conformance_matrix_is_generated_from_the_published_reports(tmp_path):
    from kafka_ref.conformance.matrix import DOCS_REPORTS, write_matrix

    committed = (DOCS_REPORTS / "matrix.md").read_text()
    for path in [*DOCS_REPORTS.glob("*.json"), *DOCS_REPORTS.glob("*.notes.md")]:
        shutil.copy(path, tmp_path / path.name)
    assert committed == write_matrix(tmp_path).read_text(), (
        "docs/conformance/matrix.md is stale: python -m kafka_ref.conformance.matrix"
    )
    assert "matrix.md" in (ROOT / "mkdocs.yml").read_text(), "the matrix is not in the nav"


def test_the_cli_reference_page_is_generated_from_the_code():
    from kafka_ref.tools.cli_reference import render

    page = (ROOT / "docs" / "cli.md").read_text()
    assert page == render(), "regenerate: python -m kafka_ref.tools.cli_reference > docs/cli.md"


def test_the_api_reference_has_a_current_page_for_every_package():
    from kafka_ref.tools.api_reference import PACKAGES, packages_present, render

    nav = (ROOT / "mkdocs.yml").read_text()
    on_disk = {p.stem for p in (ROOT / "docs" / "api").glob("*.md")}
    assert on_disk == set(packages_present()), "regenerate: python -m kafka_ref.tools.api_reference"
    for package in packages_present():
        page = (ROOT / "docs" / "api" / f"{package}.md").read_text()
        assert page == render(package), f"docs/api/{package}.md is stale: regenerate it"
        assert f"api/{package}.md" in nav, f"docs/api/{package}.md is not in mkdocs.yml's nav"
    unknown = {p.parent.name for p in (ROOT / "kafka_ref").glob("*/__init__.py")} - set(PACKAGES)
    assert not unknown, f"packages without an API page: {sorted(unknown)} (add to PACKAGES)"
