import sys
from tests.fuzz.trace_files import fuzz_trace_files
n, f = fuzz_trace_files(float(sys.argv[1]), int(sys.argv[2]))
print(n, len(f)); seen=set()
for c, found in f:
    key = found.strip().splitlines()[-1][:80]
    if key in seen: continue
    seen.add(key); print("---", c, found)
