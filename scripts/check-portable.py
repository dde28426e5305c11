#!/usr/bin/env python3
"""check-portable.py - the C core calls what Linux alone has only in its
platform layer, CSources/os/ (os.h names the replacement of each), and
writes to no stream of the program's (stderr, stdout): the log function
(hearth_set_log, common/log.c) is its one voice.

Every .c and .h under CSources/ outside os/ is read with its comments
removed (prose may name fdatasync; code may not), and each call, header
or constant below that macOS or iOS lacks, or has with other meaning,
fails the check with its file, line and what to use instead. Fast (no
compiler): `make test-portable`, part of `make test-c`.
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLATFORM = ROOT / "CSources" / "os"

# (regular expression over code without comments, why / what to use)
RULES = [
    (r"\bfdatasync\s*\(", "Darwin has no fdatasync; use hearth__os_datasync"),
    (r"\bfsync\s*\(", "Darwin's fsync leaves data in the drive's cache; "
                      "use hearth__os_sync (F_FULLFSYNC there)"),
    (r"\bmalloc_trim\s*\(|<malloc\.h>|\bmallinfo2?\s*\(|\bmalloc_usable_size\s*\(",
     "glibc's allocator only; use hearth__os_trim_memory"),
    (r"\"/proc/", "Darwin has no /proc; hearth__os_pin names an open file"),
    (r"\bgetentropy\s*\(|\bgetrandom\s*\(|<sys/random\.h>|\barc4random\w*\s*\(",
     "the system's generator differs; use hearth__os_random"),
    (r"(?<![\w.>])s?rand\s*\(|(?<![\w.>])s?random\s*\(",
     "rand()/random() share the host app's sequence and are unseeded; "
     "hearth__os_random, or a generator seeded from it"),
    (r"<sys/epoll\.h>|\bepoll_\w+\s*\(|\beventfd\s*\(|\btimerfd_\w+\s*\(|"
     r"\bsignalfd\s*\(|\binotify_\w+\s*\(", "Linux-only; libuv does this"),
    (r"\baccept4\s*\(|\bpipe2\s*\(|\bdup3\s*\(|\bSOCK_NONBLOCK\b|\bSOCK_CLOEXEC\b",
     "Linux-only; fcntl after the call, or libuv"),
    (r"\bO_TMPFILE\b|\bO_PATH\b|\bO_NOATIME\b|\bO_DIRECT\b",
     "Linux-only open flags"),
    (r"\bsendfile\s*\(|\bsplice\s*\(|\bmemfd_create\s*\(|\bprctl\s*\(|"
     r"\bsync_file_range\s*\(|\b(posix_)?fallocate\s*\(|\bposix_fadvise\s*\(|"
     r"\bmremap\s*\(|\bppoll\s*\(|\bclock_nanosleep\s*\(",
     "Linux-only (or another signature on Darwin)"),
    (r"<sys/sysinfo\.h>|\bsysinfo\s*\(|\bget_nprocs\w*\s*\(|<sys/vfs\.h>|"
     r"<linux/|<endian\.h>|<byteswap\.h>|<features\.h>|<error\.h>|<mcheck\.h>",
     "a header Darwin lacks"),
    (r"\b(htobe|htole|be|le)(16|32|64)toh?\s*\(|\bbswap_(16|32|64)\s*\(",
     "<endian.h> helpers Darwin lacks; shift bytes by hand"),
    (r"\bqsort_r\s*\(|\bstrerror_r\s*\(",
     "the GNU and Darwin signatures differ"),
    (r"\bstrchrnul\s*\(|\bmemrchr\s*\(|\bexplicit_bzero\s*\(|\bsecure_getenv\s*\(|"
     r"\bfopencookie\s*\(|\bgettid\s*\(|\bgetauxval\s*\(|\bprogram_invocation_\w+",
     "GNU-only"),
    (r"\bsem_(init|timedwait)\s*\(", "unnamed POSIX semaphores fail on Darwin; "
                                     "uv_sem_t works"),
    (r"\bpthread_\w+_np\s*\(", "non-portable pthread call; signatures differ"),
    (r"\bMSG_MORE\b|\bTCP_CORK\b|\bTCP_QUICKACK\b|\bTCP_KEEPIDLE\b|\bSOL_TCP\b|"
     r"\bCLOCK_BOOTTIME\b", "Linux-only socket or clock constant"),
]
# A library writes to no stream of the app's: messages go to the log
# function (hearth_set_log), whose stderr sink is the one exception.
RULES.append((r"\bstderr\b|\bstdout\b|\bperror\s*\(|(?<![\w.>])v?printf\s*\(|"
              r"(?<![\w.>])puts\s*\(",
              "the library writes to no stream of the app's; "
              "use hearth__log (common/internal.h)"))
ALLOWED = {len(RULES) - 1: {"CSources/common/log.c"}}
COMPILED = [(re.compile(rx), why) for rx, why in RULES]


def strip_comments(text):
    """The text with comments removed (newlines kept, so lines still count)
    and string and character literals emptied, but for the start of one
    that names a path ("/proc/...)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            literal = text[i:j + 1]
            out.append(literal[:7] if literal.startswith('"/') else c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def main():
    bad = []
    files = sorted(p for p in (ROOT / "CSources").rglob("*")
                   if p.suffix in (".c", ".h") and PLATFORM not in p.parents)
    for path in files:
        code = strip_comments(path.read_text(encoding="utf-8", errors="replace"))
        for number, line in enumerate(code.split("\n"), 1):
            for k, (rx, why) in enumerate(COMPILED):
                if str(path.relative_to(ROOT)) in ALLOWED.get(k, ()):
                    continue
                m = rx.search(line)
                if m:
                    bad.append(f"{path.relative_to(ROOT)}:{number}: "
                               f"{m.group(0).strip()}: {why}")
    for b in bad:
        print("check-portable: " + b, file=sys.stderr)
    if bad:
        print(f"check-portable: {len(bad)} Linux-only call(s) outside "
              "CSources/os/ (the platform layer, os/os.h), or writes to a "
              "stream", file=sys.stderr)
        return 1
    print(f"check-portable: {len(files)} files call nothing Linux-only "
          "outside CSources/os/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
