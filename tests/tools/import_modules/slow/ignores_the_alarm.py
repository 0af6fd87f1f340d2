# expect: too_large (the worker is killed at the importer's deadline; its own run, with --timeout-s 2)
import signal
import time

signal.signal(signal.SIGALRM, signal.SIG_IGN)  # the importer's time limit no longer interrupts it
time.sleep(3600)
