# expect: load_error
# Signals the importer: in a PID namespace the worker has no visible parent (getppid() is 0), and
# as `nobody` it may not signal a root importer. Either way the run goes on.
import os
import signal

os.kill(os.getppid(), signal.SIGKILL)
os.kill(os.getppid(), signal.SIGTERM)
