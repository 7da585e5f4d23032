"""Screenshots of a report's sections for the docs (docs/reading-the-report.md).

    python -m wotbench.reporting.bench.screenshots RUN_DIR/report/index.html \\
        --out docs/img --prefix quickstart --sections verdict checks latency contention

Headless Chromium opens a copy of the page with a small script added that
records where each section starts and ends (an element's id, to the next
``<h2>`` or ``<h3>``), then takes one screenshot of the whole page, which is cut into
one PNG per section (palette PNG, at most ``--max-kb``). Not a test: it
needs Chromium and a real run's report, and writes only the PNGs it names.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]

#: Writes {id: [top, bottom]} of every asked section, and the page height, into <body data-shots>.
_SCRIPT = """<script>
window.addEventListener('load', function () {
  var ids = %s, out = {}, hs = Array.from(document.querySelectorAll('h2, h3'));
  var H = document.documentElement.scrollHeight;
  ids.forEach(function (id) {
    var el = document.getElementById(id); if (!el) return;
    var top = el.getBoundingClientRect().top + window.scrollY;
    var next = hs.map(function (h) { return h.getBoundingClientRect().top + window.scrollY; })
                 .filter(function (y) { return y > top + 4; });
    out[id] = [Math.max(0, top - 12), next.length ? next[0] - 8 : H];
  });
  document.body.setAttribute('data-shots', JSON.stringify({height: H, sections: out}));
});
</script>"""


class _Shots(HTMLParser):
    """The ``data-shots`` attribute of the dumped page's <body>."""

    def __init__(self) -> None:
        super().__init__()
        self.value: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "body":
            self.value = dict(attrs).get("data-shots")


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("error: chromium: not installed (.ci/setup.sh installs it)")
    return exe


def _run(args: list[str], tmp: Path) -> str:
    proc = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
                          capture_output=True, text=True, timeout=180, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"error: chromium exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def shoot(page: Path, out: Path, prefix: str, sections: list[str], width: int, max_kb: int) -> list[Path]:
    """One PNG per section of ``page``: ``out/<prefix>-<section>.png``."""
    with tempfile.TemporaryDirectory(prefix="wb-shots-") as d:
        tmp = Path(d)
        copy = tmp / "index.html"
        copy.write_text(page.read_text().replace("</body>", _SCRIPT % json.dumps(sections) + "</body>", 1))
        parser = _Shots()
        parser.feed(_run(["--dump-dom", "--virtual-time-budget=5000", f"--window-size={width},900",
                          copy.as_uri()], tmp))
        if parser.value is None:
            raise SystemExit(f"error: {page}: the page did not load (no section positions)")
        shots = json.loads(parser.value)
        missing = [s for s in sections if s not in shots["sections"]]
        if missing:
            raise SystemExit(f"error: {page}: no element with id {', '.join(missing)}")
        full = tmp / "full.png"
        height = min(int(shots["height"]) + 16, 16000)
        _run([f"--screenshot={full}", f"--window-size={width},{height}", copy.as_uri()], tmp)
        written = []
        with Image.open(full) as img:
            for s in sections:
                top, bottom = (int(v) for v in shots["sections"][s])
                target = out / f"{prefix}-{s}.png"
                _save(img.crop((0, top, width, min(bottom, img.height))), target, max_kb)
                written.append(target)
        return written


def annotate(png: Path, points: list[tuple[int, int]]) -> None:
    """Numbered callouts (1, 2, ...) at ``points`` (pixels of ``png``), for
    a doc that explains each number."""
    with Image.open(png) as src:
        img = src.convert("RGB")
    draw = ImageDraw.Draw(img)
    try:
        font: ImageFont.FreeTypeFont | ImageFont.ImageFont = ImageFont.truetype("DejaVuSans-Bold.ttf", 15)
    except OSError:
        font = ImageFont.load_default()
    for k, (x, y) in enumerate(points, 1):
        draw.ellipse((x - 12, y - 12, x + 12, y + 12), fill=(198, 40, 40), outline=(255, 255, 255), width=2)
        draw.text((x, y), str(k), fill=(255, 255, 255), font=font, anchor="mm")
    _save(img, png, 250)


def _points(spec: str) -> tuple[str, list[tuple[int, int]]]:
    """``SECTION=X,Y;X,Y`` -> (SECTION, [(X, Y), ...])."""
    name, _, rest = spec.partition("=")
    pts = []
    for pair in rest.split(";"):
        x, _, y = pair.partition(",")
        if not (x.strip().isdigit() and y.strip().isdigit()):
            raise SystemExit(f"error: --mark {spec}: each point is X,Y in whole pixels")
        pts.append((int(x), int(y)))
    return name, pts


def _save(img: Image.Image, target: Path, max_kb: int) -> None:
    """A palette PNG, scaled down until it fits ``max_kb``."""
    pic = img.convert("RGB")
    while True:
        tmp = target.with_name(target.name + ".tmp")
        pic.quantize(colors=128).save(tmp, format="PNG", optimize=True)
        if tmp.stat().st_size <= max_kb * 1024 or pic.width < 600:
            tmp.replace(target)
            return
        pic = pic.resize((int(pic.width * 0.85), int(pic.height * 0.85)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("page", type=Path, help="a report's index.html")
    ap.add_argument("--out", type=Path, required=True, help="folder for the PNGs")
    ap.add_argument("--prefix", required=True, help="file names: PREFIX-SECTION.png")
    ap.add_argument("--sections", nargs="+", required=True, help="element ids to shoot (to the next <h2> or <h3>)")
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--max-kb", type=int, default=250)
    ap.add_argument("--mark", action="append", default=[], metavar="SECTION=X,Y;X,Y",
                    help="numbered callouts on a section's PNG, in order (repeatable)")
    a = ap.parse_args(argv)
    marks = dict(_points(m) for m in a.mark)
    if not a.page.is_file():
        print(f"error: {a.page}: no such file", file=sys.stderr)
        return 2
    a.out.mkdir(parents=True, exist_ok=True)
    for s, p in zip(a.sections, shoot(a.page, a.out, a.prefix, a.sections, a.width, a.max_kb), strict=True):
        if s in marks:
            annotate(p, marks[s])
        print(f"{p} {p.stat().st_size // 1024} KB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
