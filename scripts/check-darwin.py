#!/usr/bin/env python3
"""check-darwin.py - the client's C library as an Apple platform builds it.

Compiles every C file of the client's targets in Package.swift (CHearth,
CHearthAppleTLS, and the vendored jansson, libuv, wslay and http-parser of
Vendor/) for arm64-apple-macos13 and arm64-apple-ios16, with -Wall -Wextra
-Werror, against Darwin's own libc headers (those the ziglang wheel ships:
clang, Apple's libc headers, and a linker that writes Mach-O); then links
them into a macOS .dylib and checks what it needs and exports.

What this cannot be: Xcode. The headers are the macOS SDK's libc headers
(the iOS SDK's differ only in availability markings, which the ios16
target still applies); <sqlite3.h> is Debian's (the SDKs ship their own
of the same API); the dylib's SQLite and zlib symbols are left for the
SDK's libraries, and no iOS binary is linked or run.

Usage: check-darwin.py ZIG_PYTHON (a python with the ziglang module).
"""
import concurrent.futures
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "build" / "darwin"
TARGETS = {"macos": "aarch64-macos.13.0", "ios": "aarch64-ios.16.0"}
STRICT = ["-Wall", "-Wextra", "-Werror"]
# What the dylib may leave to the system beyond libSystem: the SDK's
# SQLite and zlib (the client's cache; libz for the codec).
SYSTEM_SYMBOL = re.compile(
    r"^_(sqlite3_\w+|crc32|adler32|inflate\w*|deflate\w*|compress\w*|"
    r"uncompress\w*|zlibVersion|gz\w+)$")


def package_strings(pattern, what):
    """The quoted strings of the bracketed list that PATTERN's group 1
    matches in Package.swift (`what` names it when it is not there)."""
    m = re.search(pattern, (ROOT / "Package.swift").read_text(), re.S)
    if not m:
        sys.exit(f"check-darwin: no {what} in Package.swift")
    return re.findall(r'"([^"]+)"', m.group(1))


def swift_list(name):
    """The string array `let NAME = [...]` of Package.swift."""
    return package_strings(r"let %s = \[(.*?)\]" % re.escape(name),
                           f"`let {name} = [...]`")


def target_sources(name):
    """The `sources:` list of target NAME in Package.swift."""
    return package_strings(r'name: "%s".*?sources: \[(.*?)\]' % re.escape(name),
                           f"sources of {name}")


def client_files():
    """CHearth's C files: CSources/ less the server's and the TLS files,
    then CHearthAppleTLS's (Package.swift's lists)."""
    left_out = [ROOT / "CSources" / p for p in swift_list("serverOnly") + swift_list("tlsFiles")]
    files = []
    for f in sorted((ROOT / "CSources").rglob("*.c")):
        if not any(f == p or p in f.parents for p in left_out):
            files.append(f)
    files.append(ROOT / "CSources/net/apple/tls.c")
    return files


def units(sqlite_dir):
    """(source, flags) for every C file of the client's targets."""
    v = ROOT / "Vendor"
    vendor_inc = ["-I", v / "jansson/include", "-I", v / "libuv/include",
                  "-I", v / "wslay/lib/includes", "-I", v / "http-parser/include"]
    core = ["-std=c11", "-D_GNU_SOURCE", "-fvisibility=hidden", *STRICT,
            "-I", ROOT / "CSources", "-I", ROOT / "CSources/include", *vendor_inc,
            "-idirafter", sqlite_dir]
    out = [(f, core) for f in client_files()]
    jansson = [*STRICT, "-DHAVE_CONFIG_H", "-I", v / "jansson/include",
               "-I", v / "jansson/generated"]
    out += [(f, jansson) for f in sorted((v / "jansson/src").glob("*.c"))]
    wslay = [*STRICT, "-DHAVE_CONFIG_H", "-I", v / "wslay/lib/includes",
             "-I", v / "wslay/generated"]
    out += [(f, wslay) for f in sorted((v / "wslay/lib").glob("*.c"))]
    out.append((v / "http-parser/http_parser.c", [*STRICT, "-I", v / "http-parser/include"]))
    # libuv's own warnings (its CMakeLists.txt: -Wno-unused-parameter) and
    # defines on Apple, as Package.swift's VendorLibUV has them.
    libuv = [*STRICT, "-Wno-unused-parameter", "-Wstrict-prototypes",
             "-D_DARWIN_UNLIMITED_SELECT=1", "-D_DARWIN_USE_64_BIT_INODE=1",
             "-D_FILE_OFFSET_BITS=64", "-D_LARGEFILE_SOURCE",
             "-I", v / "libuv/include", "-I", v / "libuv/src"]
    out += [(v / "libuv" / s, libuv) for s in target_sources("VendorLibUV")]
    return out


def compile_all(zig, darwin_headers, platform, triple, sqlite_dir):
    objdir = OUT / platform
    shutil.rmtree(objdir, ignore_errors=True)
    objdir.mkdir(parents=True)
    # zig's libc headers serve its macOS targets; for iOS they are named.
    extra = ["-isystem", darwin_headers] if platform == "ios" else []
    jobs = []
    for src, flags in units(sqlite_dir):
        rel = src.relative_to(ROOT)
        obj = objdir / (str(rel).replace("/", "_") + ".o")
        cmd = [*zig, "cc", "-target", triple, *extra, *map(str, flags),
               "-c", str(src), "-o", str(obj)]
        jobs.append((rel, obj, cmd))
    failed = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = pool.map(lambda j: (j, subprocess.run(j[2], capture_output=True, text=True)), jobs)
        for (rel, _, _), r in results:
            if r.returncode:
                failed.append(rel)
                sys.stderr.write(f"check-darwin: {platform}: {rel}:\n{r.stderr}")
    if failed:
        sys.exit(f"check-darwin: {len(failed)} of {len(jobs)} files do not "
                 f"compile for {triple}")
    print(f"check-darwin: {len(jobs)} C files compile for {triple} "
          "with -Wall -Wextra -Werror")
    return [obj for _, obj, _ in jobs]


def link_dylib(zig, objs):
    dylib = OUT / "libhearth.dylib"
    base = [*zig, "cc", "-target", TARGETS["macos"], "-shared",
            "-Wl,-install_name,@rpath/libhearth.dylib", "-o", str(dylib),
            *map(str, objs)]
    r = subprocess.run(base, capture_output=True, text=True)
    missing = sorted(set(re.findall(r"undefined symbol: (_\w+)", r.stderr)))
    foreign = [s for s in missing if not SYSTEM_SYMBOL.match(s)]
    if r.returncode and (foreign or not missing):
        sys.stderr.write(r.stderr)
        sys.exit("check-darwin: the client library does not link: "
                 + (", ".join(foreign) or "see above"))
    if missing:
        # The SDK's SQLite and zlib, described as the SDK describes its
        # libraries (text stubs naming the dylib and the symbols used):
        # the dylib then depends on /usr/lib's, as an Xcode build would.
        with tempfile.TemporaryDirectory() as stubs:
            sqlite = [s for s in missing if s.startswith("_sqlite3_")]
            zlib = [s for s in missing if s not in sqlite]
            for lib, path, syms in (("sqlite3", "/usr/lib/libsqlite3.dylib", sqlite),
                                    ("z", "/usr/lib/libz.1.dylib", zlib)):
                pathlib.Path(stubs, f"lib{lib}.tbd").write_text(
                    "--- !tapi-tbd\ntbd-version: 4\n"
                    "targets: [ arm64-macos, arm64e-macos ]\n"
                    f"install-name: '{path}'\n"
                    "exports:\n  - targets: [ arm64-macos, arm64e-macos ]\n"
                    f"    symbols: [ {', '.join(syms) or '_' + lib + '_none'} ]\n...\n")
            r = subprocess.run(base + ["-L", stubs, "-lsqlite3", "-lz"],
                               capture_output=True, text=True)
        if r.returncode:
            sys.stderr.write(r.stderr)
            sys.exit("check-darwin: the client library does not link")
    head = dylib.read_bytes()[:16]
    # MH_MAGIC_64, CPU_TYPE_ARM64, MH_DYLIB
    if head[:4] != b"\xcf\xfa\xed\xfe" or head[4:8] != b"\x0c\x00\x00\x01" \
            or head[12:16] != b"\x06\x00\x00\x00":
        sys.exit(f"check-darwin: {dylib} is not an arm64 Mach-O dylib")
    print(f"check-darwin: {dylib.relative_to(ROOT)} links for "
          f"{TARGETS['macos']} ({dylib.stat().st_size // 1024} KiB; from "
          f"the SDK's libsqlite3 and libz: {len(missing)} symbols)")
    return dylib


def check_dependencies(dylib):
    objdump = shutil.which("llvm-objdump")
    if not objdump:
        print("check-darwin: no llvm-objdump here: the dylibs used are not checked")
        return
    r = subprocess.run([objdump, "--macho", "--dylibs-used", str(dylib)],
                       capture_output=True, text=True, check=True)
    used = {line.split()[0] for line in r.stdout.splitlines()[1:] if line.strip()}
    used.discard("@rpath/libhearth.dylib")  # its own name
    allowed = {"/usr/lib/libSystem.B.dylib", "/usr/lib/libsqlite3.dylib",
               "/usr/lib/libz.1.dylib"}
    if used - allowed:
        sys.exit(f"check-darwin: the dylib needs more than the system: {sorted(used - allowed)}")
    print("check-darwin: it needs only " + ", ".join(sorted(used)))


def check_exports(dylib):
    nm = shutil.which("llvm-nm")
    if not nm:
        print("check-darwin: no llvm-nm here: the exports are not checked")
        return
    r = subprocess.run([nm, "-gU", str(dylib)], capture_output=True, text=True,
                       check=True)
    names = {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}
    ours = {n for n in names if n.startswith("_hearth")}
    internal = sorted(n for n in ours if n.startswith("_hearth__"))
    header = (ROOT / "include/hearth.h").read_text()
    # The client's part of the public API (the server's is HearthServer's).
    wanted = ["_hearth_db_open", "_hearth_db_set", "_hearth_db_observe",
              "_hearth_node_from_json", "_hearth_set_log", "_hearth_backup",
              "_hearth_version"]
    absent = [w for w in wanted if w not in ours or w[1:] not in header]
    if internal or absent:
        sys.exit("check-darwin: the dylib's exports are wrong: "
                 f"internal {internal[:5]}, missing {absent}")
    print(f"check-darwin: it exports {len(ours)} hearth_* functions, "
          "no internal hearth__ one")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    zig = [sys.argv[1], "-m", "ziglang"]
    r = subprocess.run([*zig, "env"], capture_output=True, text=True)
    if r.returncode:
        sys.exit("check-darwin: no ziglang in " + sys.argv[1])
    exe = re.search(r'zig_exe"?\s*[:=]\s*"([^"]+)"', r.stdout)
    if not exe:
        sys.exit("check-darwin: `zig env` names no zig_exe")
    darwin_headers = pathlib.Path(exe.group(1)).parent / "lib/libc/include/any-darwin-any"
    if not darwin_headers.is_dir():
        sys.exit(f"check-darwin: no Darwin headers at {darwin_headers}")
    with tempfile.TemporaryDirectory() as sqlite_dir:
        # <sqlite3.h> alone: no other Linux header may be found there.
        shutil.copy("/usr/include/sqlite3.h", sqlite_dir)
        objs = {}
        for platform, triple in TARGETS.items():
            objs[platform] = compile_all(zig, darwin_headers, platform, triple,
                                         sqlite_dir)
    dylib = link_dylib(zig, objs["macos"])
    check_dependencies(dylib)
    check_exports(dylib)


if __name__ == "__main__":
    main()
