# expect: load_error
# Forks until fork fails (RLIMIT_NPROC); every child sleeps. The count is in the error.
import os
import time

n, t0 = 0, time.monotonic()
try:
    while n < 100_000:
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
        n += 1
except OSError as e:
    raise RuntimeError(f"forked {n} before {e.strerror} in {time.monotonic() - t0:.1f} s") from None
raise RuntimeError(f"forked {n} without a limit")
