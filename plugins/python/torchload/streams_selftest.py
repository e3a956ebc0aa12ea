"""The Python SDK's host streams against CUDA's rules, without a GPU (run
by plugins/python's TestPythonStreamsSelftest; exits 1 on a failure):

- a held copy runs only at the release; a wait on an event recorded after
  it waits too; a wait on an earlier record does not;
- a wait queued before the event's record waits for nothing;
- a counter wait holds its stream until a write reaches its value, in the
  wrapping order CU_STREAM_WAIT_VALUE_GEQ uses; one nothing satisfies is a
  deadlock, described and forced through.
"""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from kvharness_sdk.streams import Ref, geq, host_exec  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def new():
    dev, host = np.zeros(4096, dtype=np.uint8), (np.arange(4096) * 7 + 1).astype(np.uint8)
    return host_exec([dev, host]), dev, host


# Held copy, events before and after.
x, dev, host = new()
load, gated, early = x.new_stream("load"), x.new_stream("gated"), x.new_stream("early")
before, after = x.new_event("before"), x.new_event("after")
x.begin(None, True)
load.record(before)
x._hold(load._id)
load.copy(Ref(0, 0), Ref(1, 0), 64)
load.record(after)
gated.wait(after)
gated.copy(Ref(0, 1024), Ref(0, 0), 64)
early.wait(before)
early.copy(Ref(0, 2048), Ref(0, 0), 64)
check(dev[0] == 0 and not dev[2048:2112].any(), "a held copy ran before the release, or the early reader saw it")
check(x.end() == "", "a deadlock where there is none")
check((dev[:64] == host[:64]).all() and (dev[1024:1088] == host[:64]).all(), "after the release the load or the gated reader is wrong")
tr = x.trace()
check(tr[4].after == 3 and tr[4].held, f"the gated wait is ordered after #{tr[4].after}, held {tr[4].held}")
check(tr[6].after == 0 and not tr[6].held, f"the early wait is ordered after #{tr[6].after}, held {tr[6].held}")

# A wait before the record waits for nothing.
x, dev, host = new()
load, consumer = x.new_stream("load"), x.new_stream("consumer")
e = x.new_event("layer")
x.begin(None, True)
x._hold(load._id)
load.copy(Ref(0, 0), Ref(1, 0), 64)
consumer.wait(e)
load.record(e)
consumer.copy(Ref(0, 512), Ref(0, 0), 64)
check(not dev[512:576].any() and dev[0] == 0, "the consumer waited for a record queued after its wait")
x.end()
check(x.trace()[2].after == -1, "a wait before the record is ordered after something")

# Counters: wait, wrap, deadlock.
x, dev, host = new()
load, consumer = x.new_stream("load"), x.new_stream("consumer")
c = x.new_counter("done")
x.begin(None, False)
consumer.wait_value(c, 2)
consumer.copy(Ref(0, 512), Ref(0, 0), 64)
load.copy(Ref(0, 0), Ref(1, 0), 64)
load.write_value(c, 1)
check(dev[512] == 0, "the consumer ran at counter 1, waiting for 2")
load.write_value(c, 2)
check((dev[512:576] == host[:64]).all(), "after the write of 2 the consumer did not read the load")
check(x.trace()[0].after == 4, f"the counter wait is ordered after #{x.trace()[0].after}, want #4")
x.end()
check(geq(1, 0xFFFFFFFF) and not geq(0xFFFFFFFF, 1), "geq does not wrap")
x.begin(None, False)
consumer.wait_value(c, 9)
consumer.copy(Ref(0, 1024), Ref(1, 1024), 64)
d = x.end()
check("waits for counter done ≥ 9, which holds 2" in d, f"deadlock {d!r}")
check((dev[1024:1088] == host[1024:1088]).all(), "the op behind the forced wait did not run")

for f in failures:
    print("FAIL:", f)
print("streams selftest:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
