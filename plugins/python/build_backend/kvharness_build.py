"""The SDK's own PEP 517 build backend: builds kvharness_sdk's wheel (and
an sdist) with the standard library alone, so ``pip install plugins/python``
needs no network: pip's isolated build environment has nothing to fetch
(``requires = []``), where setuptools would have to be downloaded into it.

The package's metadata is here, in METADATA: name, version, what it needs
at run time, and the ``pytest11`` entry point of its pytest plugin.
"""

import base64
import hashlib
import io
import os
import tarfile
import zipfile

NAME = "kvharness_sdk"
DIST = "kvharness-sdk"
VERSION = "2.0.0"
REQUIRES_PYTHON = ">=3.8"
REQUIRES = ["grpcio>=1.51", "protobuf>=4.21", "numpy>=1.21"]
EXTRAS = {"cuda": ["torch>=2.1", "triton>=2.2"]}
SUMMARY = ("Write kvharness KV-cache kernel plugins (store, read, transfer, load) in Python: numpy on the CPU, "
           "PyTorch or Triton on the GPU; check them from pytest")
ENTRY_POINTS = "[pytest11]\nkvharness = kvharness_sdk.pytest_plugin\n"

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"


def _metadata():
    lines = ["Metadata-Version: 2.1", f"Name: {DIST}", f"Version: {VERSION}", f"Summary: {SUMMARY}",
             f"Requires-Python: {REQUIRES_PYTHON}"]
    lines += [f"Requires-Dist: {r}" for r in REQUIRES]
    for extra, reqs in EXTRAS.items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {r}; extra == "{extra}"' for r in reqs]
    lines.append("Description-Content-Type: text/markdown")
    readme = os.path.join(HERE, "README.md")
    body = open(readme, encoding="utf-8").read() if os.path.exists(readme) else ""
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """The package's files: every .py under kvharness_sdk, no caches."""
    out = []
    for root, dirs, files in os.walk(os.path.join(HERE, NAME)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if f.endswith(".py") or f.endswith(".pyi") or f == "py.typed":
                full = os.path.join(root, f)
                out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _wheel_name():
    return f"{NAME}-{VERSION}-{TAG}.whl"


def _write_wheel(directory, files):
    dist_info = f"{NAME}-{VERSION}.dist-info"
    extra = [(f"{dist_info}/METADATA", _metadata().encode()),
             (f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: kvharness_build\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode()),
             (f"{dist_info}/entry_points.txt", ENTRY_POINTS.encode()),
             (f"{dist_info}/top_level.txt", f"{NAME}\n".encode())]
    path = os.path.join(directory, _wheel_name())
    records = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for arc, data in files + extra:
            z.writestr(zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0)), data)
            records.append(_record_line(arc, data))
        records.append(f"{dist_info}/RECORD,,")
        z.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=(1980, 1, 1, 0, 0, 0)), "\n".join(records) + "\n")
    return os.path.basename(path)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = [(arc, open(full, "rb").read()) for arc, full in _package_files()]
    return _write_wheel(wheel_directory, files)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts this folder on sys.path."""
    return _write_wheel(wheel_directory, [(f"{NAME}.pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{DIST.replace('-', '_')}-{VERSION}"
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as tar:
        names = ["pyproject.toml", "README.md", "build_backend/kvharness_build.py"] + [a for a, _ in _package_files()]
        for name in names:
            full = os.path.join(HERE, name)
            if os.path.exists(full):
                tar.add(full, arcname=f"{base}/{name}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return os.path.basename(path)
