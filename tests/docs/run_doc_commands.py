#!/usr/bin/env python3
"""Runs the command blocks of README.md, docs/install.md and docs/user-guide.md as written.

Every fenced block tagged sh, bash or shell is a command block. It runs, unless the line before
it (blank lines aside) is a marker:

  <!-- docs-test: skip (why) -->  not run: it needs a real cluster, a registry, root, ...
  <!-- docs-test: start -->       a server the reader leaves running in another terminal: it is
                                  started in the background, and the next blocks run once it is
                                  ready
  <!-- docs-test: stop -->        the reader stops what was started (Ctrl-C) before this block

Blocks of one file run in order, each with `bash -e -o pipefail` from the repository's top
directory; a block that exits non-zero fails the test. What the test changes, and only this:

  * port 39999 becomes a free port, and /tmp/ a fresh temporary directory, so that the test can
    run beside other tests and other copies of itself (one port per file);
  * run-standalone.sh gets GPUSHARE_LISTEN=127.0.0.1:<that port> (its documented override);
  * the scripts get GPUSHARE_BUILD_DIR=<source>/build, the suite's own build directory, which
    the commands' build/ names anyway: run-standalone.sh then builds the extender there (already
    built: seconds) instead of compiling it a second time into build-standalone/, as it does on
    a fresh machine (that path is run-standalone.sh's own, the compiler's work is the same);
  * after a command that goes to the background (`&`, or a `start` block) the test waits until
    it is ready, as a reader would before typing the next command: the fake API server until
    the kubeconfig it writes (--kubeconfig-out) exists, the extender (and run-standalone.sh)
    until its /readyz answers 200.

Commands that need a program this machine lacks (kubectl is not a Debian 12 package) make their
block skipped, and said so. Everything started is stopped at the end of each file. The summary
line counts the blocks run and skipped.

  run_doc_commands.py SOURCE_DIR [FILE...]
"""

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

FILES = ["README.md", "docs/install.md", "docs/user-guide.md"]
COMMAND_LANGUAGES = {"sh", "bash", "shell"}
MARKER = re.compile(r"^<!--\s*docs-test:\s*(skip|start|stop)\b\s*(.*?)\s*-->$")
DOCUMENTED_PORT = "39999"
# A reader does not wait for a build; the test does (run-standalone.sh builds the extender first).
START_TIMEOUT_S = 1500
READY_TIMEOUT_S = 120
# Programs a command may start with that some machines lack; a block using one is skipped there.
OPTIONAL_PROGRAMS = ["kubectl"]


class Block:
    def __init__(self, path, line, language, text, marker, reason):
        self.path, self.line, self.language, self.text = path, line, language, text
        self.marker, self.reason = marker, reason

    def where(self):
        return f"{self.path}:{self.line}"


def blocks_of(path, text):
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        fence = re.match(r"^(\s*)(```+)\s*([\w+-]*)", lines[i])
        if not fence:
            i += 1
            continue
        indent, ticks, language = fence.group(1), fence.group(2), fence.group(3)
        start = i
        body = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(ticks):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        marker, reason = None, ""
        j = start - 1
        while j >= 0 and not lines[j].strip():
            j -= 1
        if j >= 0:
            found = MARKER.match(lines[j].strip())
            if found:
                marker, reason = found.group(1), found.group(2).strip("() ")
        blocks.append(Block(path, start + 1, language, "\n".join(body), marker, reason))
    return blocks


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def substitute(text, port, tmp):
    text = text.replace(DOCUMENTED_PORT, str(port))
    return re.sub(r"(?<![\w.-])/tmp/", tmp + "/", text)


def commands_of(text):
    """The block's commands: lines joined at a trailing backslash."""
    commands, current = [], ""
    for line in text.splitlines():
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        commands.append(current + line)
        current = ""
    if current:
        commands.append(current)
    return commands


def readiness_check(command, port):
    """How to tell that a command started in the background is ready: a shell condition."""
    words = command.split()
    if any(w.endswith("gpushare-fake-apiserver") for w in words):
        for k, w in enumerate(words):
            if w == "--kubeconfig-out" and k + 1 < len(words):
                return f"test -s {words[k + 1]}"
            if w.startswith("--kubeconfig-out="):
                return f"test -s {w.split('=', 1)[1]}"
    if any(w.endswith("gpushare-extender") or w.endswith("run-standalone.sh") for w in words):
        listen = re.search(r"--listen[= ](\S+)", command)
        address = listen.group(1) if listen else f"127.0.0.1:{port}"
        address = address.replace("0.0.0.0", "127.0.0.1")
        return f"curl -sf http://{address}/readyz >/dev/null"
    return None


WAIT_FUNCTION = """
docs_test_wait() {  # docs_test_wait TIMEOUT_S CONDITION: the reader waits before typing on
  local deadline=$((SECONDS + $1))
  until eval "$2"; do
    if ((SECONDS > deadline)); then echo "docs-test: not ready after $1 s: $2" >&2; return 1; fi
    sleep 0.2
  done
}
"""


def script_of(block, port, tmp):
    out = ["set -e -o pipefail", WAIT_FUNCTION]
    for command in commands_of(substitute(block.text, port, tmp)):
        out.append(command)
        if command.rstrip().endswith("&"):
            check = readiness_check(command, port)
            if check:
                out.append(f"docs_test_wait {READY_TIMEOUT_S} {shlex.quote(check)}")
    return "\n".join(out) + "\n"


def missing_program(block):
    for program in OPTIONAL_PROGRAMS:
        if re.search(rf"(^|[\s|;&(]){program}\s", block.text, re.M) and shutil.which(program) is None:
            return program
    return None


class Session:
    """One file's blocks: the process groups it started, stopped together."""

    def __init__(self, source_dir):
        self.source_dir = source_dir
        self.port = free_port()
        self.tmp = tempfile.mkdtemp(prefix="gpushare-docs-")
        self.started = []  # Popen objects, each leading its own process group
        self.env = dict(os.environ)
        self.env["GPUSHARE_LISTEN"] = f"127.0.0.1:{self.port}"
        self.env["GPUSHARE_BUILD_DIR"] = os.path.join(source_dir, "build")

    def popen(self, script, log):
        return subprocess.Popen(["bash", "-c", script], cwd=self.source_dir, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def run(self, block):
        script = script_of(block, self.port, self.tmp)
        log_path = os.path.join(self.tmp, f"block-{block.line}.log")
        with open(log_path, "w") as log:
            process = self.popen(script, log)
            self.started.append(process)
            if block.marker == "start":
                return self.wait_started(block, process, log_path)
            try:
                code = process.wait(timeout=START_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                code = "timeout"
        output = open(log_path).read()
        if code != 0:
            return f"exit {code}\n--- script ---\n{script}--- output ---\n{output}"
        return None

    def wait_started(self, block, process, log_path):
        check = None
        for command in commands_of(substitute(block.text, self.port, self.tmp)):
            check = check or readiness_check(command, self.port)
        deadline = time.monotonic() + START_TIMEOUT_S
        while check and time.monotonic() < deadline:
            if process.poll() is not None:
                return f"the server exited ({process.returncode}) before it was ready\n{open(log_path).read()}"
            if subprocess.run(["bash", "-c", check], cwd=self.source_dir).returncode == 0:
                return None
            time.sleep(0.5)
        return None if not check else f"not ready after {START_TIMEOUT_S} s\n{open(log_path).read()}"

    def stop(self):
        for process in self.started:
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for process in self.started:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
        self.started = []

    def close(self):
        self.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main():
    source_dir = os.path.abspath(sys.argv[1])
    files = sys.argv[2:] or FILES
    ran, skipped, failures = 0, [], []
    for name in files:
        path = os.path.join(source_dir, name)
        session = Session(source_dir)
        try:
            for block in blocks_of(name, open(path).read()):
                if block.language not in COMMAND_LANGUAGES:
                    continue
                if block.marker == "skip":
                    skipped.append(f"{block.where()}: {block.reason or 'marked skip'}")
                    continue
                program = missing_program(block)
                if program:
                    skipped.append(f"{block.where()}: {program} is not installed here")
                    continue
                if block.marker == "stop":
                    session.stop()
                began = time.monotonic()
                failure = session.run(block)
                ran += 1
                status = "FAILED" if failure else "ok"
                print(f"docs-test: {block.where()}: {status} ({time.monotonic() - began:.1f} s)", flush=True)
                if failure:
                    failures.append(f"{block.where()}: {failure}")
        finally:
            session.close()
    for line in skipped:
        print(f"docs-test: skipped {line}")
    for failure in failures:
        print(f"\ndocs-test: FAILED {failure}")
    print(f"\ndocs-test: {ran} blocks run, {len(failures)} failed, {len(skipped)} skipped")
    return 1 if failures or ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
