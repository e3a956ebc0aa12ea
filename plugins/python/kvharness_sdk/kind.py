"""What a kernel kind is to the SDK: a module (store.py, read.py, ...)
with its service, its checks and its kernel's view of a call, which
registers with the plugin's service (service.py) through one value.

The base service knows no kind by name: it registers every kind whose
``serves`` says the kernel implements it, and Describe lists them, by the
name of their service (protocol.kernel_of), in registration order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from . import protocol as pb


@dataclass(frozen=True)
class Kind:
    """One kernel kind, as its module serves it.

    - ``service``: the kind's service descriptor, from its generated
      module (``store_pb2.DESCRIPTOR.services_by_name["Store"]``);
    - ``serves(kernel)``: whether the kernel implements the kind;
    - ``servicer(core)``: the kind's servicer, working on the plugin's
      service ``core`` (its kernel, lock, attachment and hooks);
    - ``add(servicer, server)``: the generated ``add_XServicer_to_server``.
    """

    service: Any
    serves: Callable[[Any], bool]
    servicer: Callable[[Any], Any]
    add: Callable[[Any, Any], None]

    @property
    def name(self) -> str:
        """The kind's name: its service's, in lower case."""
        return pb.kernel_of(self.service.full_name)
