#!/usr/bin/env python3
"""check-link.py - SwiftPM and the Makefile link the same libraries.

LIBRARIES (at the repository's root) is the one list of the system
libraries the C core links; the Makefile reads it. Package.swift cannot
read a file (SwiftPM may sandbox the manifest), so this check reads
Package.swift instead: every library it links (a systemLibrary target's
pkgConfig module, mapped to its linker name through LIBRARIES, or a
.linkedLibrary) must be in LIBRARIES, and every library of LIBRARIES
marked "swiftpm" must be linked there. Each difference is named with
where to fix it. Fast (no compiler): `make test-link`, part of
`make test-c`.

Usage: check-link.py [LIBRARIES [Package.swift]] (both default to the
repository's).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def read_libraries(path):
    """(pkg-config module or None, linker name, how) per line; exits with
    the line at fault when one is malformed."""
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cols = line.split()
        if len(cols) != 3 or cols[2] not in ("swiftpm", "libc"):
            sys.exit(f"check-link: {path}:{number}: expected 'MODULE|- NAME "
                     f"swiftpm|libc', got {line!r}")
        rows.append((None if cols[0] == "-" else cols[0], cols[1], cols[2]))
    return rows


def swiftpm_links(manifest, modules):
    """The linker names Package.swift links, each with the first line
    naming it; exits when a pkgConfig module is not in LIBRARIES."""
    text = manifest.read_text()
    found = {}
    for m in re.finditer(r'\.linkedLibrary\(\s*"([^"]+)"', text):
        found.setdefault(m.group(1), text.count("\n", 0, m.start()) + 1)
    for m in re.finditer(r'pkgConfig:\s*"([^"]+)"', text):
        line = text.count("\n", 0, m.start()) + 1
        if m.group(1) not in modules:
            sys.exit(f"check-link: {manifest}:{line}: pkgConfig "
                     f"\"{m.group(1)}\" is not a module of LIBRARIES: add it "
                     f"there (the Makefile links what LIBRARIES lists)")
        found.setdefault(modules[m.group(1)], line)
    return found


def main():
    libraries = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "LIBRARIES"
    manifest = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "Package.swift"
    rows = read_libraries(libraries)
    modules = {module: name for module, name, _ in rows if module}
    linked = swiftpm_links(manifest, modules)
    failures = []
    for name, line in sorted(linked.items()):
        if not any(n == name for _, n, _ in rows):
            failures.append(f"{manifest}:{line}: links \"{name}\", which "
                            f"{libraries.name} does not list (the Makefile "
                            f"would not link it): add it there")
    for _, name, how in rows:
        if how == "swiftpm" and name not in linked:
            failures.append(f"{libraries}: \"{name}\" is linked by the "
                            f"Makefile but not by {manifest.name}: add "
                            f".linkedLibrary(\"{name}\") to the target that "
                            f"needs it, or mark it libc")
    for f in failures:
        print(f"check-link: {f}", file=sys.stderr)
    if failures:
        return 1
    print(f"check-link: {manifest.name} links what {libraries.name} lists "
          f"({len(rows)} libraries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
