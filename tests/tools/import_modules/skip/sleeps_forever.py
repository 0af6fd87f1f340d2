# expect: load_error (the suite runs with --timeout-s 5)
import time

while True:
    time.sleep(0.05)
