"""pytest plugin: check a kernel with kvharness from your own test file.

Installed with the SDK (``pytest11`` entry point ``kvharness``), it gives
tests a ``kvharness`` fixture::

    from kvharness_sdk import Geometry, Kernel, SHM

    class MyStore(Kernel):
        ...

    def test_store(kvharness):
        kvharness.check(MyStore, layouts=["bf16"], paddings="all", cases=2000)

    def test_mutants(kvharness):
        kvharness.mutants(MyStore)

``check`` runs the real ``kvharness check`` binary against the kernel
(served in a process of its own by a launcher and manifest the fixture
writes under pytest's cache, with the interpreter that runs pytest) and
fails the test with kvharness's report (the minimal case, want/got bytes,
the violation, the replay line) as its message. Layouts and paddings given
as literals in the call, or by ``@pytest.mark.kvharness(layouts=...,
paddings=...)``, are read as tests are collected: each layout and padding
is a test of its own (``test_store[bf16-count]``). ``mutants`` runs
``kvharness mutants`` and fails when a mutant survives or a control fails.

The binary is ``--kvharness PATH``, else ``$KVHARNESS_BIN``, else
``kvharness`` on PATH; without one the tests are skipped, saying how to
get it (``--kvharness-required`` makes that an error). ``--kvharness-backend``
picks the pool's backend (default auto: the GPU where there is one).

It uses the command line alone, as a user would: no SDK internals.
"""

import ast
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

PADDINGS = ("none", "count", "sink", "minus1")

_EXIT_PASS, _EXIT_VIOLATION = 0, 1


def pytest_addoption(parser):
    group = parser.getgroup("kvharness")
    group.addoption("--kvharness", dest="kvharness_bin", default=None, metavar="PATH",
                    help="the kvharness binary (default: $KVHARNESS_BIN, else kvharness on PATH)")
    group.addoption("--kvharness-backend", dest="kvharness_backend", default="auto",
                    help="where the pool lives: cpu, cuda or auto (default)")
    group.addoption("--kvharness-required", dest="kvharness_required", action="store_true",
                    help="fail, not skip, the kvharness tests when no kvharness binary is found")


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "kvharness(layouts=None, paddings='all'): the layouts and paddings the kvharness fixture checks, "
        "each a test of its own")


def pytest_generate_tests(metafunc):
    if "kvharness" not in metafunc.fixturenames:
        return
    rows = _rows_of(metafunc)
    if rows:
        metafunc.parametrize("kvharness", rows, indirect=True, ids=["-".join(r) for r in rows])


def _rows_of(metafunc):
    """The (layout, padding) rows a test asks for: by its marker, else by
    the literal arguments of its kvharness.check call; none when they are
    not literals (the call then checks them all in one test)."""
    marker = metafunc.definition.get_closest_marker("kvharness")
    if marker is not None:
        return _expand(marker.kwargs.get("layouts"), marker.kwargs.get("paddings", "all"))
    call = _check_call(metafunc.function)
    if call is None:
        return []
    try:
        layouts = ast.literal_eval(call["layouts"]) if "layouts" in call else None
        paddings = ast.literal_eval(call["paddings"]) if "paddings" in call else "all"
    except ValueError:
        return []
    return _expand(layouts, paddings)


def _check_call(fn):
    """The keyword arguments (as AST nodes) of the first kvharness.check
    call in fn's source, or None."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "check"
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "kvharness"):
            return {k.arg: k.value for k in node.keywords if k.arg}
    return None


def _expand(layouts, paddings):
    """Rows of layouts × paddings; a layout of "all" (or none named) stays
    one row per padding, since the plugin says which it has."""
    if layouts is None or layouts == "all":
        layouts = ["all"]
    elif isinstance(layouts, str):
        layouts = [layouts]
    if paddings is None or paddings == "all":
        paddings = list(PADDINGS)
    elif isinstance(paddings, str):
        paddings = [paddings]
    for p in paddings:
        if p not in PADDINGS:
            raise pytest.UsageError(f"kvharness paddings: {p!r} is none of {', '.join(PADDINGS)} or all")
    return [(l, p) for l in layouts for p in paddings]


@pytest.fixture
def kvharness(request):
    """The kvharness command, bound to this test: check and mutants."""
    return Harness(request, getattr(request, "param", None))


class Harness:
    """Runs kvharness for one test. See the module's doc."""

    def __init__(self, request, row):
        self._request = request
        self._row = row
        self.binary = _find_binary(request.config)
        self.backend = request.config.getoption("kvharness_backend")

    def check(self, kernel, layouts=None, paddings="all", cases=500, kernel_kind=None, seed=1, variant=None,
              backend=None, args=()):
        """Checks kernel (a Kernel class or instance, a manifest's path, or a
        plugin command line) with kvharness check, over layouts (names, or
        None/"all": every layout it declares) and paddings ("all", a name or
        names); fails the test with the report on a violation. Returns the
        report's text."""
        plugin, results = self._plugin(kernel)
        rows = [self._row] if self._row else _expand(layouts, paddings)
        if self._row and self._row not in _expand(layouts, paddings):
            pytest.fail(f"kvharness: this test's row {self._row} is not among layouts={layouts!r}, paddings={paddings!r}",
                        pytrace=False)
        reports = []
        for layout, padding in _merge(rows):
            argv = [self.binary, "check", "--plugin", plugin, "--cases", str(cases), "--seed", str(seed),
                    "--layout", layout, "--padding", padding, "--backend", backend or self.backend, "--results", results]
            if kernel_kind:
                argv += ["--kernel", kernel_kind]
            if variant:
                argv += ["--variant", variant]
            reports.append(self._run(argv + list(args)))
        return "\n".join(reports)

    def mutants(self, kernel, cases=1000, seed=1, backend=None, args=()):
        """Runs kvharness mutants over kernel's controls and variants; fails
        the test when a mutant survives or a control fails, with the table.
        Returns the table's text."""
        plugin, _ = self._plugin(kernel)
        return self._run([self.binary, "mutants", "--plugin", plugin, "--cases", str(cases), "--seed", str(seed),
                          "--backend", backend or self.backend] + list(args))

    def _run(self, argv):
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if proc.returncode == _EXIT_PASS:
            return proc.stdout
        if proc.returncode == _EXIT_VIOLATION:
            pytest.fail(proc.stdout.rstrip() + _stderr_note(proc.stderr), pytrace=False)
        pytest.fail(f"kvharness could not run ({' '.join(argv[1:3])}, exit {proc.returncode}):\n{proc.stderr.rstrip()}"
                    f"\n{proc.stdout.rstrip()}", pytrace=False)

    def _plugin(self, kernel):
        """The --plugin that runs kernel, and the results folder for its
        repro files: both under pytest's cache, so a replay line stays
        valid after the test."""
        if isinstance(kernel, (str, os.PathLike)):
            name = re.sub(r"[^\w.-]", "_", os.path.basename(str(kernel).split()[-1]))
            home = self._cache(name)
            return str(kernel), os.path.join(home, "results")
        cls = kernel if isinstance(kernel, type) else type(kernel)
        home = self._cache(getattr(cls, "name", "") or cls.__name__)
        return _launcher(cls, home), os.path.join(home, "results")

    def _cache(self, name):
        cache = getattr(self._request.config, "cache", None)
        if cache is not None:
            home = str(cache.mkdir("kvharness"))
        else:  # -p no:cacheprovider
            home = str(self._request.config.rootpath / ".kvharness")
        home = os.path.join(home, re.sub(r"[^\w.-]", "_", name))
        os.makedirs(home, exist_ok=True)
        return home


def _merge(rows):
    """Rows as kvharness check runs them: one run for all paddings of a
    layout when every padding is asked for."""
    out = []
    for layout in dict.fromkeys(l for l, _ in rows):
        ps = [p for l, p in rows if l == layout]
        if sorted(ps) == sorted(PADDINGS):
            out.append((layout, "all"))
        else:
            out.extend((layout, p) for p in ps)
    return out


def _stderr_note(stderr):
    lines = [l for l in stderr.splitlines() if l.startswith("kvharness:")]
    return ("\n" + "\n".join(lines)) if lines else ""


def _find_binary(config):
    path = config.getoption("kvharness_bin") or os.environ.get("KVHARNESS_BIN") or shutil.which("kvharness")
    why = None
    if not path:
        why = ("no kvharness binary: install it from a checkout (go install ./harness/cmd/kvharness, then put "
               "$(go env GOPATH)/bin on PATH), or name it with --kvharness PATH or $KVHARNESS_BIN")
    elif not (os.path.isfile(path) and os.access(path, os.X_OK)):
        why = f"kvharness binary {path} is not an executable file; give --kvharness PATH"
    if why is None:
        return os.path.abspath(path)
    if config.getoption("kvharness_required"):
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


_LAUNCHER = '''\
# Written by the kvharness pytest plugin: serves {qualname} from {module}.
import importlib.util
import sys

sys.dont_write_bytecode = True
sys.path[:0] = {paths!r}
spec = importlib.util.spec_from_file_location("kvharness_kernel_module", {module!r})
mod = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = mod
spec.loader.exec_module(mod)
kernel = mod
for part in {qualname!r}.split("."):
    kernel = getattr(kernel, part)

from kvharness_sdk import serve  # noqa: E402

serve(kernel())
'''


def _launcher(cls, home):
    """Writes a launcher that serves cls and its manifest into home, and
    returns the manifest's path."""
    if "<locals>" in cls.__qualname__:
        raise pytest.UsageError(f"kvharness: {cls.__qualname__} is defined inside a function; define the kernel class "
                                "at a module's top level, where its plugin process can import it")
    module = inspect.getfile(cls)
    sdk_home = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = os.path.join(home, "launcher.py")
    text = _LAUNCHER.format(qualname=cls.__qualname__, module=os.path.abspath(module),
                            paths=[sdk_home, os.path.dirname(os.path.abspath(module))])
    _write(script, text)
    manifest = os.path.join(home, "kvharness-plugin.json")
    name = getattr(cls, "name", "") or cls.__name__
    _write(manifest, json.dumps({"name": name, "command": [sys.executable, "launcher.py"], "mtls": False}, indent=2) + "\n")
    return manifest


def _write(path, text):
    """Writes text to path whole: a temporary file renamed into place."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)
