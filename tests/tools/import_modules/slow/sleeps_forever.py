# expect: load_error (its own run, with --timeout-s 2)
import time

while True:
    time.sleep(0.05)
