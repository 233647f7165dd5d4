#!/usr/bin/env python3
"""Checks that README.md's "Layout" table names every folder a newcomer looks for.

The folders: each top-level product folder, each folder directly under src/, src/extender/,
src/cmd/, include/gpushare/, include/gpushare/extender/ and tests/. A folder counts as named when
its path appears in backquotes in the section (`src/http`), or, for a top-level folder,
as its bare name (`bench`). Exits 1 listing the missing ones; also fails for a named path that
no longer exists, and for a folder under tests/unit/ that mirrors no source folder (tests/unit/X
tests src/X, or include/gpushare/X for the header-only ones).

  tests/docs/check_layout.py SOURCE_DIR
"""
import pathlib
import re
import sys

TOP_LEVEL = ["bench", "deploy", "docs", "scripts", "fuzz", "cmake", ".ci"]
LISTED_BELOW = ["src", "src/cmd", "include/gpushare", "tests"]


def folders(root):
    found = [name for name in TOP_LEVEL if (root / name).is_dir()]
    for parent in LISTED_BELOW:
        for child in sorted((root / parent).iterdir()):
            path = f"{parent}/{child.name}"
            # A folder whose children are listed is named through them.
            if child.is_dir() and not child.name.startswith(".") and path not in LISTED_BELOW:
                found.append(path)
    return found


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    readme = (root / "README.md").read_text()
    match = re.search(r"^## Layout\n(.*?)^## ", readme, re.S | re.M)
    if not match:
        print("README.md has no '## Layout' section")
        return 1
    named = set(re.findall(r"`([^`\s]+)`", match.group(1)))
    missing = [f for f in folders(root) if f not in named]
    # Paths the table names that look like folders of the tree but are gone.
    stale = sorted(p for p in named
                   if re.match(r"^(src|include|tests|bench|deploy|docs|scripts|fuzz)/", p)
                   and not (root / p).exists())
    # Unit tests sit on one axis: each folder under tests/unit mirrors a source folder.
    unit = root / "tests" / "unit"
    unmirrored = sorted(str(d.relative_to(root)) for d in unit.rglob("*") if d.is_dir()
                        and not (root / "src" / d.relative_to(unit)).is_dir()
                        and not (root / "include" / "gpushare" / d.relative_to(unit)).is_dir())
    for path in unmirrored:
        print(f"{path} mirrors no folder of src/ or include/gpushare/")
    for path in missing:
        print(f"README.md Layout: no row names `{path}`")
    for path in stale:
        print(f"README.md Layout: `{path}` does not exist")
    return 1 if missing or stale or unmirrored else 0


if __name__ == "__main__":
    sys.exit(main())
