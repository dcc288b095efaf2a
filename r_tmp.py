import numpy as np, tempfile, os
from tests.fuzz import trace_files as tf
from tileworkbench.interp import Trace
d = tempfile.mkdtemp(); paths = tf.seed_traces(d)
t = Trace.load(paths[2])
for k, e in enumerate(t.events):
    if e.op in ("cat", "extract", "permute", "reshape"):
        t2 = Trace.load(paths[2])
        ev = t2.events[k]
        ev.coords = ev.coords.copy(); ev.coords[..., 0] = 0; ev.coords[..., 1] = 0
        p = os.path.join(d, "x.npz"); t2.save(p)
        print(e.op, tf.check_file(p))
