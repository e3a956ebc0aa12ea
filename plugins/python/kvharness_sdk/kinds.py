"""The kernel kinds the SDK serves, in the order Describe lists them (the
first is the kind of a variant that names none): one line per kind."""

from . import load, pdasync, read, store, transfer

KINDS = (store.KIND, read.KIND, transfer.KIND, load.KIND, pdasync.KIND)
